"""The console's terminal program, on prompt_toolkit.

prompt_toolkit, not textual: it draws a full-screen application from one function of the
state (screen.render), takes every key through one binding (so each key goes through
ConsoleModel.press and nothing else), runs in any terminal that tmux or SSH gives, and adds
one small pure-Python dependency; textual brings its own widget and CSS system, which a
screen of text and one prompt does not need.
"""

from __future__ import annotations

import threading

from indgen_core.errors import require
from indgen_robot.console import model as m
from indgen_robot.console import screen

#: prompt_toolkit's key names -> the model's
KEYS = {
    "c-m": "enter",
    "c-j": "enter",
    "enter": "enter",
    " ": "space",
    "escape": "escape",
    "c-h": "backspace",
    "backspace": "backspace",
}


def key_name(key: object) -> str:
    """The model's name for a key prompt_toolkit reports: a character as itself (space, which
    prompt_toolkit reports as " ", is "space"), a named key by KEYS or its own name."""
    name = key if isinstance(key, str) else str(getattr(key, "value", key))
    return KEYS.get(name, name)


def run(model: m.ConsoleModel, link) -> int:
    pt = require("prompt_toolkit", "all", "indgen console")
    from prompt_toolkit.application import Application, get_app
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.layout import Layout
    from prompt_toolkit.layout.containers import Window
    from prompt_toolkit.layout.controls import FormattedTextControl

    lock = threading.RLock() if link is None else link.lock
    bindings = KeyBindings()

    @bindings.add("c-c")
    def _quit(event):  # the console leaves; the campaign goes on without it (or waits for it)
        event.app.exit(result=0)

    @bindings.add("<any>")
    def _key(event):
        key = key_name(event.key_sequence[0].key)
        with lock:
            requests = model.press(key)
        if requests and link is not None:
            link.send(requests)

    def text():
        if link is not None:
            link.refresh()
        width = screen.fit(get_app().output.get_size().columns)
        with lock:
            return screen.render(model, width)

    app: Application[int] = Application(
        layout=Layout(Window(FormattedTextControl(text), wrap_lines=False)),
        key_bindings=bindings,
        full_screen=True,
        refresh_interval=0.2,
        mouse_support=False,
    )
    _ = pt
    return int(app.run() or 0)
