from workers.ops.cli import main

main()
