"""BlockEnv: the paper's toy task (section 5.1, Appendix A), where the inductive rule is known
by construction. See env.py for the construction and docs/guides/blockenv.md for its parameters."""
