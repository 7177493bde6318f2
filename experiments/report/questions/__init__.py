"""Every question, one by one: why each wrong answer was lost (`reasons`), and the rows of the question viewer
(`rows`) that experiments/report/page/questions_html.py renders into questions.html beside report.html."""
