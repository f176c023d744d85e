# SPDX-License-Identifier: MIT
"""`python -m snapfs_client ...`, and `python PATH/snapfs_client ...` from the source tree:
the snapfs-client command."""
import os
import sys

if not __package__:
    # Run as a directory: its parent is where the package imports from.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from snapfs_client.cli import main  # noqa: E402

sys.exit(main())
