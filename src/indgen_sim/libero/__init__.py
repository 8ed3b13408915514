"""LIBERO-Object behind the world interface (optional: `pip install -e .[libero]`)."""
