"""Checks of a derived joint-mapper table by forward kinematics (no rclpy; the acceptance of
:mod:`hand_joint_mapper.derive_joint_map` on a hand, and the test hand with a wrist).

- :func:`check`: derive the table for a URDF, load it in the :class:`~.joint_mapping.JointMapper`
  and map every human joint at flexion 0 and 1 (and a sweep -0.2...1.2): fingertip distances from
  rest (m) at flexion 0, fingertip-to-palm-centre ratios (closed / rest) at flexion 1, the largest
  excursion beyond the URDF limits (rad) and the largest ``<mimic>`` equation error (rad) of the
  published positions.
- :func:`leap_with_wrist`: LEAP's URDF with two revolute wrist joints (flexion, deviation) and a
  forearm link above its palm, mesh paths made absolute: a hand tree whose digits branch two
  joints below the root.
"""

from __future__ import annotations

import pathlib
import re
import sys
from dataclasses import dataclass

import numpy as np

from hand_common.contract import JOINT_NAMES

from .derive_joint_map import _Kin, derive, to_yaml
from .joint_mapping import JointMapper, parse_table, parse_urdf


@dataclass
class DeriveCheck:
    """Figures of one URDF (see the module docstring); ``digits`` in tip order of the arrays."""

    urdf: str
    digits: tuple[str, ...]
    wrist: tuple[str, ...]
    open_mm: np.ndarray          # (k,) tip distance from rest at flexion 0, mm
    closed_ratio: np.ndarray     # (k,) tip-to-palm-centre distance at flexion 1 / at rest
    limit_excess: float          # rad beyond the URDF limits over the sweep (0 = within)
    mimic_error: float           # rad, largest |q_mimic - (m q_src + o)| (clipped to its limits)
    wrist_moved: float           # rad, largest |q - rest| of a wrist joint over the sweep

    @property
    def ok(self) -> bool:
        return (float(self.open_mm.max()) <= 5.0 and float(self.closed_ratio.max()) <= 0.6
                and self.limit_excess <= 1e-9 and self.mimic_error <= 1e-9 and self.wrist_moved == 0.0)


def check(urdf: str) -> DeriveCheck:
    """Derive ``urdf``'s table and measure it (module docstring). ValueError as derive() raises."""
    import yaml

    derived = derive(urdf)
    table = parse_table(yaml.safe_load(to_yaml(derived, urdf)), urdf)
    text = pathlib.Path(urdf).read_text()
    mapper = JointMapper.from_urdf(text, table)
    _, joints = parse_urdf(text)
    kin = _Kin(urdf)
    digits = tuple(derived.tips)
    tips = [derived.tips[d] for d in digits]

    def tip_pos(values: dict[str, float]) -> np.ndarray:
        pos = kin.frames(values)
        return np.array([pos[t] for t in tips])

    rest = tip_pos({})
    centre = derived.centre

    def mapped(f: float) -> dict[str, float]:
        return dict(zip(mapper.names, (float(v) for v in mapper.map(dict.fromkeys(JOINT_NAMES, f)).positions)))

    open_mm = np.linalg.norm(tip_pos(mapped(0.0)) - rest, axis=1) * 1e3
    ratio = np.linalg.norm(tip_pos(mapped(1.0)) - centre, axis=1) / np.linalg.norm(rest - centre, axis=1)
    excess, mimic_err, wrist_moved = 0.0, 0.0, 0.0
    for f in np.linspace(-0.2, 1.2, 15):
        q = mapped(float(f))
        for n, v in q.items():
            j = joints[n]
            if j.limits is not None:
                excess = max(excess, j.limits[0] - v, v - j.limits[1])
            if j.mimic is not None and j.mimic.joint in q:
                want = j.mimic.multiplier * q[j.mimic.joint] + j.mimic.offset
                if j.limits is not None:
                    want = min(max(want, j.limits[0]), j.limits[1])
                mimic_err = max(mimic_err, abs(v - want))
            if n in derived.wrist:
                wrist_moved = max(wrist_moved, abs(v - kin.rest[n]))
    return DeriveCheck(urdf, digits, tuple(derived.wrist), open_mm, ratio, max(excess, 0.0), mimic_err, wrist_moved)


WRIST = """  <link name="forearm"><inertial><mass value="0.3"/><inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1e-3"/></inertial>
    <visual><origin xyz="0 0 -0.06"/><geometry><cylinder radius="0.03" length="0.12"/></geometry></visual></link>
  <link name="wrist_link"><inertial><mass value="0.05"/><inertia ixx="1e-5" ixy="0" ixz="0" iyy="1e-5" iyz="0" izz="1e-5"/></inertial></link>
  <joint name="wrist_flexion" type="revolute"><parent link="forearm"/><child link="wrist_link"/>
    <origin xyz="0 0 0.02"/><axis xyz="1 0 0"/><limit lower="-1.0" upper="1.0" effort="5" velocity="3"/></joint>
  <joint name="wrist_deviation" type="revolute"><parent link="wrist_link"/><child link="{root}"/>
    <origin xyz="0 0 0.01"/><axis xyz="0 1 0"/><limit lower="-0.5" upper="0.5" effort="5" velocity="3"/></joint>
"""


def leap_with_wrist(leap_urdf: str | pathlib.Path, out: str | pathlib.Path) -> pathlib.Path:
    """Write LEAP's URDF with a forearm and two wrist joints above its root link to ``out``."""
    src = pathlib.Path(leap_urdf)
    text = src.read_text()
    root = re.search(r'<link\s+name="([^"]+)"', text).group(1)
    text = re.sub(r'filename="(?!/|package://)([^"]+)"', lambda m: f'filename="{(src.parent / m.group(1)).resolve()}"',
                  text)
    text = re.sub(r"(<robot[^>]*>)", lambda m: m.group(1) + "\n" + WRIST.format(root=root), text, count=1)
    out = pathlib.Path(out)
    out.write_text(text)
    return out


def print_table(results: list[DeriveCheck]) -> None:
    print(f"{'derive_joint_map on':44s} {'wrist':>6s} {'flexion 0: tip mm max':>22s} {'flexion 1: tip/palm max':>24s} "
          f"{'limits':>7s} {'mimic':>8s}  verdict")
    for r in results:
        print(f"{pathlib.Path(r.urdf).name:44s} {len(r.wrist):6d} {r.open_mm.max():22.2f} {r.closed_ratio.max():24.2f} "
              f"{'ok' if r.limit_excess <= 1e-9 else f'{r.limit_excess:.1e}':>7s} {r.mimic_error:8.1e}  "
              f"{'PASS' if r.ok else 'FAIL'}")


def main(argv: list[str] | None = None) -> int:
    """``python -m hand_joint_mapper.derive_check URDF...``: the table of :func:`check` per URDF."""
    argv = sys.argv[1:] if argv is None else argv
    results = []
    for u in argv:
        try:
            results.append(check(u))
        except ValueError as exc:
            print(f"{u}: error: {exc}", file=sys.stderr)
            return 2
    print_table(results)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())


