"""`python -m experiments.import`: prediction files from elsewhere become run directories
(experiments.importers.predictions)."""

import sys

from experiments.importers.predictions import main

if __name__ == "__main__":
    sys.exit(main())
