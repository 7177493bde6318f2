"""`python -m experiments.import`: prediction files from elsewhere become run directories (experiments.predictions)."""

import sys

from experiments.predictions import main

if __name__ == "__main__":
    sys.exit(main())
