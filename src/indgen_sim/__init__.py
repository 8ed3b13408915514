"""Simulated worlds: BlockEnv, the DROID FR3 twin in MuJoCo, ...

MuJoCo chooses its GL backend when it is first imported; every world here renders headless
(reports, camera topics), so the choice is made as soon as this package is imported, before
any of its modules imports mujoco. A user's own MUJOCO_GL wins.
"""

from indgen_core.rendering import use_headless_gl

use_headless_gl()
