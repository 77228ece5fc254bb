from migrator.cli import main

raise SystemExit(main())
