"""The policy wire protocol: openpi's websocket protocol, byte for byte.

- A client connects to ws://host:port (optionally sending `Authorization: Api-Key <key>`); the
  server answers with one frame: the policy metadata (a msgpack map).
- Each request is one msgpack frame holding the observation dict (numpy arrays encoded as
  {"__ndarray__", "data", "dtype", "shape"}); the reply is a msgpack map with "actions" and
  `policy_timing` / `server_timing` ({"infer_ms", "prev_total_ms"}).
- On an error the server sends a text frame (the error) and closes with code 1011.
- GET /healthz answers 200 OK.
Both sides use IndGen's own codec (codec.py): the frames are openpi's, but every frame from the
network is decoded as hostile input (numeric dtypes only, shapes checked against the data,
bounded sizes), so an openpi client or server still talks to IndGen's side unchanged.
"""
