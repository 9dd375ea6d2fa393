from evalharness.cli import main

main()
