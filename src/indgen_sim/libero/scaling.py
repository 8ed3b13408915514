"""The object-scale axis: the pick object scaled uniformly, geometry and mass. LIBERO builds
its scenes from MJCF, so the scene's XML is edited under the object's body (positions of its
geoms, sites and sub-bodies, primitive geom sizes, the scale of its meshes) and the simulator
is rebuilt from it; densities are unchanged, so the mass follows the volume (s^3)."""

from __future__ import annotations

import xml.etree.ElementTree as ET


def _scaled(text: str, s: float) -> str:
    return " ".join(f"{float(v) * s:.6g}" for v in text.split())


def scaled_xml(xml: str, body: str, s: float) -> str:
    """`xml` with everything under the body named `body` scaled by `s` about its origin."""
    root = ET.fromstring(xml)
    top = root.find(f".//body[@name='{body}']")
    if top is None:
        raise ValueError(f"no body '{body}' in the scene")
    meshes = set()
    for el in top.iter():
        pos = el.get("pos")
        if el is not top and el.tag in ("body", "geom", "site") and pos is not None:
            el.set("pos", _scaled(pos, s))
        size = el.get("size")
        if el.tag == "geom":
            if el.get("type") == "mesh" or el.get("mesh"):
                meshes.add(el.get("mesh"))
            elif size is not None:
                el.set("size", _scaled(size, s))
        elif el.tag == "site" and size is not None:
            el.set("size", _scaled(size, s))
    asset = root.find("asset")
    for mesh in asset.iter("mesh") if asset is not None else ():
        if mesh.get("name") in meshes:
            mesh.set("scale", _scaled(mesh.get("scale", "1 1 1"), s))
    return ET.tostring(root, encoding="unicode")
