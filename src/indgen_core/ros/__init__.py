"""The core's ROS layer: the progression manager, the scorer and the recorder nodes, the node
base (parameters, QoS, guarded services), records -> messages (convert), the message helpers
for the FR3 and LIBERO topics, and the launch_ros description of a graph profile. Only ros/
layers import rclpy, launch or generated interfaces (test_layers.py); reading messages into
records needs no ROS (indgen_core/nodes/messages.py)."""
