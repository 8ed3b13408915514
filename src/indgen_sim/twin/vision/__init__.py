"""The twin's camera-based tau_0 policy (`droid_twin_vision`): it sees only what pi0.5-DROID
sees (the exterior and wrist images, joint and gripper positions, the prompt) and answers
pi0.5's kind of reply, an open-loop chunk of DROID joint velocities.

Two learned parts, both trained by behaviour cloning at tau_0 only:
- perception (`network`), a small CNN per camera with an MLP that also reads the gripper, the
  task and the pinch point's pose (`features`): it estimates where the object to pick and the
  target are and the pick object's yaw;
- control, the state-based policy's MLP (bc.py), fed with those estimates instead of the
  privileged poses (`policy`).

`features` is what the network sees and predicts, `network` the CNN and its fitting, `policy`
the served policy and its checkpoint, `data` the episodes and views the samples come from,
`training` the DAgger rounds and the saved checkpoint.
"""

from indgen_sim.twin.vision.policy import TwinVisionPolicy

__all__ = ["TwinVisionPolicy"]
