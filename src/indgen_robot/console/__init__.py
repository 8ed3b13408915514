"""`indgen console`: the person at the robot's side of a campaign (model.py: states and
keys; link.py: the graph; screen.py: the screen; app.py: the terminal)."""
