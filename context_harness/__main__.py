from context_harness.cli import main_server

if __name__ == "__main__":
    main_server()
