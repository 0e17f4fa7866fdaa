#!/usr/bin/env python3
"""Seeds for fuzz/fuzz_nfs3d_args.c: one byte choosing the NFSv3
procedure (1 + byte % 21), then its XDR arguments (RFC 1813 §3.3) with a
file handle in rpcrdma-nfs3d's layout (tools/nfs3d/fh.c)."""
import os
import struct
import sys

from engine_seeds import w


def opaque(b):
    return w(len(b)) + b + b'\0' * ((4 - len(b) % 4) % 4)


def fh(kernel=b'\x01\x02\x03\x04\x05\x06\x07\x08'):
    hdr = b'N\x01' + bytes([len(kernel), 0]) + struct.pack('>Q', 0x1234) + \
        struct.pack('>i', 1)
    return opaque(hdr + kernel)


def sattr(mode=None):
    return (w(1, mode) if mode is not None else w(0)) + w(0, 0, 0, 0, 0)


H = fh()
seeds = {
    'getattr': (1, H),
    'setattr_guard': (2, H + sattr(0o644) + w(1, 5, 6)),
    'lookup': (3, H + opaque(b'name')),
    'access': (4, H + w(0x3f)),
    'readlink': (5, H),
    'read': (6, H + w(0, 0, 4096)),
    'write': (7, H + w(0, 0, 5, 2) + opaque(b'hello')),
    'create_unchecked': (8, H + opaque(b'f') + w(0) + sattr(0o600)),
    'create_exclusive': (8, H + opaque(b'x') + w(2) + b'verifier'),
    'mkdir': (9, H + opaque(b'd') + sattr(0o755)),
    'symlink': (10, H + opaque(b'l') + sattr() + opaque(b'target')),
    'mknod_chr': (11, H + opaque(b'c') + w(4) + sattr(0o600) + w(1, 3)),
    'mknod_fifo': (11, H + opaque(b'p') + w(7) + sattr()),
    'remove': (12, H + opaque(b'f')),
    'rename': (14, H + opaque(b'a') + H + opaque(b'b')),
    'link': (15, H + H + opaque(b'h')),
    'readdir': (16, H + w(0, 0) + b'\0' * 8 + w(4096)),
    'readdirplus': (17, H + w(0, 0) + b'\0' * 8 + w(4096, 65536)),
    'commit': (21, H + w(0, 0, 0)),
    # A name announced at 4 GiB - 2 in 4 bytes of message: libtirpc
    # allocated it before looking (fixed by the bounds in nfs3.x).
    'lookup_huge_name': (3, H + w(0xfffffffe)),
    'rename_huge_name': (14, H + opaque(b'a') + H + w(0xfffffffe)),
    'write_huge_data': (7, H + w(0, 0, 5, 2) + w(0xfffffff0)),
}

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), '..', 'corpus', 'fuzz_nfs3d_args')
os.makedirs(out, exist_ok=True)
for name, (proc, body) in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(bytes([proc - 1]) + body)
