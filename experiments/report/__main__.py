import sys

from experiments.report.page.build import main

sys.exit(main())
