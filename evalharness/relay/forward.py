"""In-container forwarder: 127.0.0.1:PORT -> the relay's unix socket (stdlib only, Python 3.7+).

Copied into the per-trial folder mounted in the sandbox and started next to the agent:
``python3 forward.py PORT SOCKET READY_FILE``. It moves bytes both ways and understands
nothing; the relay on the host decides what may pass. READY_FILE is created once listening.
"""

import socket
import sys
import threading


def _pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _serve_one(client, socket_path):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def main(port, socket_path, ready_file):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    with open(ready_file, "w") as f:
        f.write("ready\n")
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_serve_one, args=(client, socket_path), daemon=True).start()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3])
