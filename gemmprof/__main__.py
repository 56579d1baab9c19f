from gemmprof.cli import main

main()
