"""The real cell, as plain Python the FR3 runner, the stand-in and the recorder share (no ROS):

- `robot_config`: a robot configuration (config/robots/<name>.yaml), every name, topic, limit
  and timing, validated once;
- `cell_config`: its parts about the cell around the arm (bring-up, what is recorded);
- `arm_controller`: the arm controller's settings the runner's promises depend on, read from
  the ros2_control parameter file;
- `arm_bounds`: the two bounds the runner promises for every segment it sends, derived once;
- `trajectory`: joint trajectories as the JointTrajectoryController interpolates them.
"""
