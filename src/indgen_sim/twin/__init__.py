"""The DROID FR3 twin: a Franka FR3 with a Robotiq 2F-85 on a table in MuJoCo, with the
objects of the paper's real-robot experiment (section 5.3) and DROID's cameras and action
semantics, so every real-robot campaign can be dry-run first."""
