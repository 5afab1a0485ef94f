#!/usr/bin/env python3
"""Serves a folder on 127.0.0.1 with byte ranges (Range: bytes=N- and N-M), ETags and If-Range, so that
downloads can resume; optionally slowly. For scripts/demo --durable.

    range_server.py DIR [--bytes-per-second N]   # prints the port it listens on, then serves
"""
import argparse
import email.utils
import http.server
import os
import re
import socketserver
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    root = "."
    rate = 0

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.respond(body=False)

    def do_GET(self):
        self.respond(body=True)

    def respond(self, body):
        name = os.path.basename(self.path.split("?", 1)[0])
        path = os.path.join(self.root, name)
        if not name or not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        info = os.stat(path)
        size = info.st_size
        etag = '"%x-%x"' % (info.st_mtime_ns, size)
        start, end, status = 0, size - 1, 200
        wanted = self.headers.get("Range")
        condition = self.headers.get("If-Range")
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", wanted or "")
        if match and (condition is None or condition == etag):
            start = int(match.group(1))
            if match.group(2):
                end = min(int(match.group(2)), size - 1)
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        self.send_response(status)
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", email.utils.formatdate(info.st_mtime, usegmt=True))
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()
        if not body:
            return
        with open(path, "rb") as source:
            source.seek(start)
            left = end - start + 1
            chunk = 16384
            while left > 0:
                data = source.read(min(chunk, left))
                if not data:
                    break
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    return
                left -= len(data)
                if self.rate:
                    time.sleep(len(data) / self.rate)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--bytes-per-second", type=int, default=0)
    arguments = parser.parse_args()
    Handler.root = arguments.root
    Handler.rate = arguments.bytes_per_second
    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
