from eventbus.cli import main

main()
