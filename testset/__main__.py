import sys

from testset.cli import main

sys.exit(main())
