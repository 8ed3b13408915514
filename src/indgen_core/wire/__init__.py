"""The policy wire protocol: openpi's websocket protocol, byte for byte.

- A client connects to ws://host:port (optionally sending `Authorization: Api-Key <key>`); the
  server answers with one frame: the policy metadata (a msgpack dict).
- Each request is one msgpack frame holding the observation dict (numpy arrays encoded as
  {"__ndarray__", "data", "dtype", "shape"}); the reply is a msgpack dict with "actions" and
  `policy_timing` / `server_timing` ({"infer_ms", "prev_total_ms"}).
- On an error the server sends the traceback as a text frame and closes with code 1011.
- GET /healthz answers 200 OK.
The msgpack-numpy codec is openpi-client's own (openpi_client.msgpack_numpy), so frames are
identical to what an openpi server sends and expects.
"""
