"""The layout of the ``sampling_state`` stat, shared by the writer (:mod:`.checkpoint`) and the
readers (:mod:`.run`): each draw carries a :data:`HEADER` then a :data:`CHUNK_BYTES` slice of a
snapshot. Its own module so that neither side imports the other for it."""

import struct

__all__ = ["CHUNK_BYTES", "HEADER", "ROW_BYTES", "STATE_STAT"]

#: the stat that carries the checkpoints
STATE_STAT = "sampling_state"
#: bytes of a snapshot carried per draw
CHUNK_BYTES = 1024
#: per draw: snapshot's draw (-1: none), chunk index, number of chunks, snapshot length in bytes
HEADER = struct.Struct("<qqqq")
#: the stat's length in bytes on every draw: the header, then the chunk
ROW_BYTES = HEADER.size + CHUNK_BYTES
