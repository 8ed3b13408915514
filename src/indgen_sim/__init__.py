"""Simulated worlds behind the world interface: BlockEnv, the MuJoCo FR3/DROID twin, LIBERO."""
