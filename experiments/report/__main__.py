import sys

from experiments.report.build import main

sys.exit(main())
