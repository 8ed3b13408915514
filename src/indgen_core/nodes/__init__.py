"""What the nodes of a graph share, as plain Python (rclpy stays in `*/ros/`):

- `declarations`, `interfaces`: each node's parameters and endpoints, declared once;
- `messages`: IndGen's messages read as plain records, and their signatures;
- `lockstep`, `world_watch`, `estop`, `repeated`: the rules every world node follows (the
  lock-step tick, what stops an episode, the e-stop topic, warnings that repeat);
- `launcher`, `graphrun`: bringing a graph up as processes, and running one campaign through it.
"""
