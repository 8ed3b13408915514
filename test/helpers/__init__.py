"""What the tests share: fakes at the true external edges (an openpi server, a Robotiq, a
person at a terminal), graph and process handling, toy worlds, and the real-world setups
(twin, sim cell). Imported by name, `from helpers import servers`; test/conftest.py puts the
test folder on sys.path, and a test that starts a process which imports a helper puts it on
that process's PYTHONPATH."""
