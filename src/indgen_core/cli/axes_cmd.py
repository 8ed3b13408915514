"""`indgen axes list | show NAME | check FILE...`"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "axes",
        help="list, show and check axes (config/axes/*.yaml)",
        description="Axes are the structured directions a task is moved along, one atomic step per "
        "level. See docs/concepts/axes.md.",
    )
    asub = p.add_subparsers(dest="axes_command", metavar="ACTION", required=True)
    lp = asub.add_parser(
        "list",
        help="every known axis, one line each",
        description="List every axis in config/axes with its world, parameter, step and levels.",
    )
    lp.set_defaults(func=cmd_list)
    sp = asub.add_parser(
        "show",
        help="the levels of one axis with their values and operator text",
        description="Print each level tau_k of an axis: parameter values in their units, "
        "in-distribution marks and the operator instruction for physical axes.",
    )
    sp.add_argument("name", help="axis name (or a YAML file)")
    sp.set_defaults(func=cmd_show)
    cp = asub.add_parser(
        "check",
        help="validate axis files and run the Definition-4 checks",
        description="Validate axis YAML files and check single axis, atomic step and nesting on "
        "their levels. Exit status 1 when any file fails.",
    )
    cp.add_argument("files", nargs="+", type=Path, help="axis YAML files")
    cp.set_defaults(func=cmd_check)


def _param_text(axis) -> str:
    if axis.is_composed:
        return " x ".join(f"{c.name}{'(|k|)' if mode == 'abs' else ''}" for c, mode in axis.components)
    p = axis.spec.parameter
    return f"{p.name} {p.step:+g} {p.unit}/level"


def cmd_list(args: argparse.Namespace) -> int:
    from rich.table import Table

    from indgen_core.axes.progression import library
    from indgen_core.report.terminal import wide_console

    table = Table(title="IndGen axes")
    for col in ("axis", "worlds", "moves", "levels", "in distribution", "regime", "source"):
        table.add_column(col)
    for axis in library().all():
        table.add_row(
            axis.name,
            ", ".join(axis.spec.worlds),
            _param_text(axis),
            f"{axis.spec.levels.min}..{axis.spec.levels.max}",
            ", ".join(str(k) for k in axis.spec.in_distribution),
            axis.spec.regime.replace("_", "-"),
            axis.spec.source,
        )
    wide_console(200).print(table)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from rich.table import Table

    from indgen_core.axes.conditions import check_progression
    from indgen_core.axes.progression import load_axis
    from indgen_core.report.terminal import wide_console

    axis = load_axis(args.name)
    console = wide_console(200)
    console.print(f"[bold]{axis.name}[/]: {axis.spec.description}")
    console.print(
        f"worlds: {', '.join(axis.spec.worlds)}; regime: {axis.spec.regime}; moves: {_param_text(axis)}; "
        f"source: {axis.spec.source or '-'}"
    )
    if axis.spec.language_instruction:
        console.print(f'instruction: "{axis.spec.language_instruction}"')
    table = Table()
    table.add_column("level")
    table.add_column("k", justify="right")
    for name in [p.name for p in axis.level(axis.spec.in_distribution[0]).parameters]:
        table.add_column(name, justify="right")
    table.add_column("")
    if axis.physical:
        table.add_column("operator instruction")
    for lv in axis.levels():
        row = [lv.label, str(lv.k)] + [f"{p.value:g} {p.unit}" for p in lv.parameters]
        row.append("in distribution" if lv.in_distribution else f"{lv.distance} step(s) out")
        if axis.physical:
            row.append(lv.operator_instruction)
        table.add_row(*row)
    console.print(table)
    report = check_progression(axis)
    console.print(
        "Definition 4: "
        + ", ".join(f"{k.replace('_', ' ')} {'ok' if v else 'FAILED'}" for k, v in report.summary().items())
    )
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from indgen_core.axes.conditions import check_progression
    from indgen_core.axes.progression import AxisLibrary
    from indgen_core.configfile import ConfigError

    lib = AxisLibrary()
    failed = 0
    checked: dict[str, Path] = {}
    for path in args.files:
        try:
            spec = lib.add_file(path, replace=True)  # an edited copy of a known axis is checked in its place
            if spec.name in checked and checked[spec.name].resolve() != Path(path).resolve():
                raise ConfigError(path, f"axis '{spec.name}' is also defined in {checked[spec.name]}", field="name")
            checked[spec.name] = Path(path)
            axis = lib.get(spec.name)
        except ConfigError as exc:
            print(f"FAIL {exc}")
            failed += 1
            continue
        report = check_progression(axis)
        if report.ok:
            print(
                f"ok   {path}: {axis.name}, levels {axis.spec.levels.min}..{axis.spec.levels.max}, "
                + ", ".join(f"{k.replace('_', ' ')} ok" for k in report.summary())
            )
        else:
            failed += 1
            for v in report.violations():
                print(f"FAIL {path}: {v.check.replace('_', ' ')}: {v.detail}")
    return 1 if failed else 0
