import sys

from campaign.cli import main

sys.exit(main())
