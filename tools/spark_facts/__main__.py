"""``python -m tools.spark_facts``: run the probes (see ``run_all``)."""

import sys

from .run_all import main

sys.exit(main(sys.argv[1:]))
