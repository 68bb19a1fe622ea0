"""`python -m dponline` is the `dponline` command."""

from dponline.cli import main

raise SystemExit(main())
