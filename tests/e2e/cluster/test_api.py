"""The rig's API client: a server that goes away mid-request is a RigError (the node agent and the scenarios wait
for it to come back), never an exception of the HTTP library that kills the calling thread."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.cluster.api import Api
from e2e.cluster.errors import RigError


@pytest.fixture
def hanging_up_server(tmp_path: Path) -> Iterator[str]:
    """A loopback TLS server that reads each request and closes the connection without an answer, as a
    kube-apiserver killed under a request does (http.client's RemoteDisconnected, not a URLError)."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    certificate = ["-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    subprocess.run(
        ["openssl", "req", *certificate, "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with tls.wrap_socket(connection, server_side=True) as secure:
                secure.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    listener.close()


def test_a_request_closed_without_an_answer_is_a_rig_error(hanging_up_server: str) -> None:
    with pytest.raises(RigError, match="unreachable"):
        Api(hanging_up_server, "token").get("/api/v1/nodes")


def test_a_watch_closed_without_an_answer_is_a_rig_error(hanging_up_server: str) -> None:
    with pytest.raises(RigError, match="unreachable while watching"):
        list(Api(hanging_up_server, "token").watch("/api/v1/pods", "0"))
