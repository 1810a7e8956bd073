"""Key-value stores processes meet through, as PyTorch's ``torch.distributed.TCPStore``.

The master process serves a dict over TCP (one thread per connection); every process, the master included, talks to
it through a client socket. Values are bytes; ``get`` and ``wait`` block until the keys exist or the timeout passes.

>>> from ember.distributed import TCPStore
>>> store = TCPStore("127.0.0.1", 0, world_size=1, is_master=True)
>>> store.set("k", "v"); store.get("k"), store.add("n", 2), store.add("n", 3)
(b'v', 2, 5)
"""
from __future__ import annotations

import datetime
import pickle
import socket
import socketserver
import struct
import sys
import threading
import time

__all__ = ["Store", "TCPStore"]

_DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)


def _send(sock, obj):
    data = pickle.dumps(obj)
    sock.sendall(struct.pack("!Q", len(data)) + data)


def _recv(sock):
    head = _recv_exact(sock, 8)
    return pickle.loads(_recv_exact(sock, struct.unpack("!Q", head)[0]))


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("TCPStore: connection closed")
        buf += chunk
    return bytes(buf)


class _Table:
    """The master's dict, with a condition that blocked ``get``/``wait`` requests sleep on."""

    def __init__(self):
        self.data, self.cond = {}, threading.Condition()

    def call(self, op, key, arg, timeout):
        with self.cond:
            if op == "set":
                self.data[key] = arg
            elif op == "add":
                self.data[key] = str(int(self.data.get(key, b"0")) + arg).encode()
            elif op == "compare_set":
                if self.data.get(key, b"") == arg[0] or (key not in self.data and not arg[0]):
                    self.data[key] = arg[1]
                return self.data.get(key, arg[0])
            elif op == "delete":
                return self.data.pop(key, None) is not None
            elif op == "num_keys":
                return len(self.data)
            elif op == "check":
                return all(k in self.data for k in key)
            elif op in ("get", "wait"):
                keys = [key] if op == "get" else key
                if not self.cond.wait_for(lambda: all(k in self.data for k in keys), timeout):
                    return TimeoutError(f"Wait timeout after {timeout * 1000:.0f}ms, keys: {keys}")
            self.cond.notify_all()
            return self.data[key] if op in ("get", "add") else None


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            try:
                request = _recv(self.request)
            except (ConnectionError, OSError):
                return
            _send(self.request, self.server.table.call(*request))


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = allow_reuse_address = True


class Store:
    """Base of the stores (PyTorch's ``torch.distributed.Store``)."""


class TCPStore(Store):
    """A key-value store over TCP: ``TCPStore(host, port, world_size, is_master)``; ``port=0`` on the master picks a
    free port (read it back from ``.port``)."""

    def __init__(self, host_name: str, port: int, world_size: int | None = None, is_master: bool = False,
                 timeout: datetime.timedelta = _DEFAULT_TIMEOUT, wait_for_workers: bool = True, multi_tenant=False,
                 master_listen_fd=None, use_libuv: bool = True):
        self.host, self.timeout, self.world_size, self.libuvBackend = host_name, timeout, world_size, use_libuv
        self._server = None
        if is_master:
            self._server = _Server((host_name, port), _Handler)
            self._server.table = _Table()
            port = self._server.server_address[1]
            threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.port = port
        self._sock = self._connect()
        self._lock = threading.Lock()
        self.add("__ember_joined", 1)
        if is_master and wait_for_workers and world_size:
            deadline = time.monotonic() + timeout.total_seconds()
            while int(self._call("get", "__ember_joined")) < world_size:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"TCPStore: timed out waiting for {world_size} workers")
                time.sleep(0.01)

    def _connect(self):
        deadline = time.monotonic() + self.timeout.total_seconds()
        while True:
            try:
                return socket.create_connection((self.host, self.port), timeout=None)
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"TCPStore: no server at {self.host}:{self.port}") from None
                time.sleep(0.05)

    def _call(self, op, key=None, arg=None, timeout=None):
        wait = (timeout or self.timeout).total_seconds()
        with self._lock:
            _send(self._sock, (op, key, arg, wait))
            out = _recv(self._sock)
        if isinstance(out, TimeoutError):
            raise DistStoreError(str(out))
        return out

    @staticmethod
    def _bytes(value) -> bytes:
        return value.encode() if isinstance(value, str) else bytes(value)

    def set(self, key: str, value) -> None:
        """Store ``value`` (str or bytes) under ``key``."""
        self._call("set", key, self._bytes(value))

    def get(self, key: str) -> bytes:
        """The value under ``key``, waiting for it up to the store's timeout."""
        return self._call("get", key)

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the integer under ``key`` (0 when absent) and return the sum."""
        return int(self._call("add", key, int(amount)))

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        """Set ``key`` to ``desired_value`` if it holds ``expected_value``; the value it then holds."""
        return self._call("compare_set", key, (self._bytes(expected_value), self._bytes(desired_value)))

    def wait(self, keys, timeout: datetime.timedelta | None = None) -> None:
        """Block until every key of ``keys`` is set."""
        self._call("wait", list(keys), timeout=timeout)

    def check(self, keys) -> bool:
        """Whether every key of ``keys`` is set, without waiting."""
        return self._call("check", list(keys))

    def delete_key(self, key: str) -> bool:
        """Remove ``key``; whether it was there."""
        return self._call("delete", key)

    def num_keys(self) -> int:
        """How many keys the store holds (PyTorch counts its own bookkeeping key too)."""
        return self._call("num_keys")

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        """The timeout ``get`` and ``wait`` use from now on."""
        self.timeout = timeout

    def __del__(self):
        sock = getattr(self, "_sock", None)
        if sock is not None:
            sock.close()
        if getattr(self, "_server", None) is not None:
            if not sys.is_finalizing():  # at exit the serving thread is frozen: waiting for it would never end
                self._server.shutdown()
            self._server.server_close()


class DistStoreError(RuntimeError):
    """A store's ``get``/``wait`` timed out (PyTorch's ``torch.distributed.DistStoreError``)."""
