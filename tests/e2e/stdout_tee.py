"""Run a command with inherited stdin/stderr, copying every byte of its stdout to ours and to a file.

Usage: python stdout_tee.py CAPTURE_FILE COMMAND [ARGS...]   (used by the stdio e2e tests)
"""

import signal
import subprocess
import sys


def main() -> int:
    capture, command = sys.argv[1], sys.argv[2:]
    child = subprocess.Popen(command, stdout=subprocess.PIPE)
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    with open(capture, "wb") as copy:
        while chunk := child.stdout.read1(65536):
            copy.write(chunk)
            copy.flush()
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
