"""`python -m thoughtline …` runs the CLI."""

from thoughtline.cli import main

raise SystemExit(main())
