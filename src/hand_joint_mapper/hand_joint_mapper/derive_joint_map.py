"""derive_joint_map: a starting joint-mapper table (YAML) for any URDF hand, by forward kinematics
(pinocchio; no rclpy, no meshes).

    derive_joint_map ../shared/robots/leap_hand/leap_hand_right.urdf -o leap_map.yaml
    python -m hand_joint_mapper.derive_joint_map URDF [-o OUT]

What it guesses, and prints (every guess is also a comment in the YAML):

1. **Chains**: every leaf link below at least two movable joints is a digit tip; its chain is the
   movable joints from the root to it; the fingers are ordered across the palm starting
   next to the thumb: index, middle, ring, pinky (a 4-digit hand has no pinky).
2. **Palm**: plane of the root and the fingers' first joints; its centre (mean of those points)
   is what "closing" approaches. The **thumb** is the chain whose removal leaves the other chains'
   bases most nearly in a row (not the one nearest the root: roots sit anywhere).
3. **Kind of joint by axis** (at the rest pose): a finger joint whose axis is within 45 degrees of
   the palm normal is an **abduction**, within 45 degrees of the finger's direction a **twist**;
   both are left unmapped (published at rest: the flexion contract has no abduction). The other
   joints are **flexions**, mapped in chain order to MCP, PIP, DIP (thumb: the last three to CMC,
   MCP, IP); surplus flexions are left unmapped.
4. **Closing direction**: the limit at which the digit's tip is nearer the palm centre (all other
   joints at rest; continuous joints: +-1 rad); ``closed`` = that limit.
5. **Open**: ``open: <rest>`` with rest = 0 clipped into the limits (a flat URDF hand is open at
   q = 0, which is usually *not* a limit).
6. ``<mimic>`` joints get no row (the mapper follows their equation); continuous joints get
   ``bounds`` of +-pi/2 around rest (a guess, printed).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

FINGERS = ("index", "middle", "ring", "pinky")
FINGER_JOINTS = ("mcp", "pip", "dip")
THUMB_JOINTS = ("cmc", "mcp", "ip")


@dataclass
class Derived:
    """rows: mapping rows (dicts for the YAML); notes: every guess, in words; chains: digit -> joints."""

    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    chains: dict[str, list[str]] = field(default_factory=dict)
    tips: dict[str, str] = field(default_factory=dict)


class _Kin:
    def __init__(self, urdf: str):
        import pinocchio as pin

        self.pin = pin
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            self.model = pin.buildModelFromUrdf(urdf)
        self.data = self.model.createData()
        m = self.model
        self.names = [m.names[i] for i in range(1, m.njoints)]
        self.lower, self.upper, self.continuous = {}, {}, {}
        for n in self.names:
            j = m.joints[m.getJointId(n)]
            self.continuous[n] = j.nq == 2
            lo, hi = float(m.lowerPositionLimit[j.idx_q]), float(m.upperPositionLimit[j.idx_q])
            if self.continuous[n] or not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo > 1e6:
                lo, hi = -math.pi, math.pi
            self.lower[n], self.upper[n] = lo, hi
        self.rest = {n: min(max(0.0, self.lower[n]), self.upper[n]) for n in self.names}

    def q(self, values: dict[str, float]) -> np.ndarray:
        x = self.pin.neutral(self.model)
        for n, v in {**self.rest, **values}.items():
            j = self.model.joints[self.model.getJointId(n)]
            if j.nq == 2:
                x[j.idx_q], x[j.idx_q + 1] = math.cos(v), math.sin(v)
            else:
                x[j.idx_q] = v
        return x

    def frames(self, values: dict[str, float] | None = None) -> dict[str, np.ndarray]:
        """{link: position (3,)} and the joints' placements (``self.data.oMi``) at rest + values."""
        self.pin.framesForwardKinematics(self.model, self.data, self.q(values or {}))
        return {f.name: self.data.oMf[i].translation.copy() for i, f in enumerate(self.model.frames)
                if f.type == self.pin.FrameType.BODY}

    def joint_pos_axis(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        jid = self.model.getJointId(name)
        self.pin.forwardKinematics(self.model, self.data, self.q({}))
        r0 = self.data.oMi[jid].rotation.copy()
        p = self.data.oMi[jid].translation.copy()
        self.pin.forwardKinematics(self.model, self.data, self.q({name: self.rest[name] + 1e-4}))
        w = self.pin.log3(self.data.oMi[jid].rotation @ r0.T)
        return p, w / np.linalg.norm(w)


def _mimic_joints(urdf: str) -> set[str]:
    import xml.etree.ElementTree as ET

    return {j.get("name") for j in ET.parse(urdf).getroot().iter("joint") if j.find("mimic") is not None}


def derive(urdf: str) -> Derived:
    """The rows and the guesses for ``urdf`` (see the module docstring). ValueError if no hand is found."""
    kin = _Kin(urdf)
    pin, m = kin.pin, kin.model
    mimic = _mimic_joints(urdf)
    out = Derived()
    # per chain base (first movable joint below the root), the body farthest out on the longest chain
    rest_pos = kin.frames()
    by_base: dict[str, tuple[str, list[str]]] = {}
    best: dict[str, tuple[int, float]] = {}
    for f in m.frames:
        if f.type != pin.FrameType.BODY:
            continue
        jid, chain = f.parentJoint, []
        while jid != 0:
            chain.append(m.names[jid])
            jid = m.parents[jid]
        chain = [c for c in chain[::-1] if c not in mimic]
        if len(chain) < 2:
            continue
        key = (len(chain), float(np.linalg.norm(rest_pos[f.name] - kin.joint_pos_axis(chain[0])[0])))
        if chain[0] not in best or key > best[chain[0]]:
            best[chain[0]] = key
            by_base[chain[0]] = (f.name, chain)
    if len(by_base) < 3:
        raise ValueError(f"{urdf}: found {len(by_base)} digit chains (need a thumb and >= 2 fingers)")
    root = np.zeros(3)
    base_pos = {b: kin.joint_pos_axis(b)[0] for b in by_base}

    def line_residual(points: list[np.ndarray]) -> float:
        a = np.array(points) - np.mean(points, axis=0)
        return float(np.linalg.svd(a, compute_uv=False)[1:].sum()) if len(points) > 2 else 0.0

    # the thumb: the chain whose removal leaves the other bases most nearly in a row
    thumb_base = min(by_base, key=lambda b: line_residual([base_pos[c] for c in by_base if c != b]))
    finger_bases = [b for b in by_base if b != thumb_base]
    centre = np.mean([base_pos[b] for b in finger_bases] + [root], axis=0)
    pts = np.array([base_pos[b] for b in finger_bases] + [root])
    _, _, vt = np.linalg.svd(pts - pts.mean(axis=0))
    normal = vt[2]
    # order fingers across the palm from the thumb side
    across = np.array(base_pos[finger_bases[0]] - base_pos[finger_bases[-1]])
    across -= (across @ normal) * normal
    across /= np.linalg.norm(across)
    if float((base_pos[thumb_base] - centre) @ across) < 0:
        across = -across
    finger_bases.sort(key=lambda b: -float(base_pos[b] @ across))
    if len(finger_bases) > 4:
        out.notes.append(f"{len(finger_bases)} finger chains; only the 4 nearest the thumb are mapped")
        finger_bases = finger_bases[:4]
    digits = {"thumb": by_base[thumb_base]} | {FINGERS[k]: by_base[b] for k, b in enumerate(finger_bases)}
    out.notes.append(f"palm: root + finger bases, centre {np.round(centre * 1e3, 1).tolist()} mm; thumb = the chain "
                     f"off the row of the other chains' bases ({thumb_base}); fingers across the palm from the thumb side: "
                     + ", ".join(f"{d}={tip}" for d, (tip, _) in digits.items() if d != "thumb"))
    if len(finger_bases) < 4:
        out.notes.append(f"no {', '.join(FINGERS[len(finger_bases):])}: those human joints drive nothing")
    for digit, (tip, chain) in digits.items():
        out.chains[digit], out.tips[digit] = chain, tip
        tip_rest = rest_pos[tip]
        direction = tip_rest - kin.joint_pos_axis(chain[0])[0]
        direction /= np.linalg.norm(direction)
        flex = []
        for j in chain:
            _, axis = kin.joint_pos_axis(j)
            if digit != "thumb" and abs(float(axis @ normal)) > math.cos(math.radians(45)):
                out.notes.append(f"{j} ({digit}): axis within 45 deg of the palm normal -> abduction, unmapped (rest)")
                continue
            if abs(float(axis @ direction)) > math.cos(math.radians(45)):
                out.notes.append(f"{j} ({digit}): axis along the digit -> twist, unmapped (rest)")
                continue
            flex.append(j)
        humans = THUMB_JOINTS if digit == "thumb" else FINGER_JOINTS
        if digit == "thumb" and len(flex) > 3:
            out.notes.append(f"thumb has {len(flex)} flexion-like joints; {flex[0]} (the first) is left unmapped "
                             "at rest, the last three drive cmc, mcp, ip")
            flex = flex[-3:]
        elif len(flex) > 3:
            out.notes.append(f"{digit}: joints {flex[3:]} beyond the third flexion are unmapped (rest)")
            flex = flex[:3]
        elif len(flex) < 3:
            out.notes.append(f"{digit}: only {len(flex)} flexion joints: {', '.join(humans[len(flex):])} drive nothing")
        for j, h in zip(flex, humans):
            rest = kin.rest[j]
            # the tip's distance to the palm centre with the joint at either limit (the rest at rest)
            d_hi = float(np.linalg.norm(kin.frames({j: kin.upper[j] if not kin.continuous[j] else rest + 1.0})[tip]
                                        - centre))
            d_lo = float(np.linalg.norm(kin.frames({j: kin.lower[j] if not kin.continuous[j] else rest - 1.0})[tip]
                                        - centre))
            closed = "upper" if d_hi < d_lo else "lower"
            plus, minus = d_hi, d_lo
            row = {"joint": j, "human": f"{digit}_{h}", "open": round(rest, 6), "closed": closed}
            how = (f"rest {rest:g} ({'0' if rest == 0.0 else 'the nearest limit'}); closed = {closed} (tip to palm "
                   f"centre {min(d_hi, d_lo) * 1e3:.0f} mm there, {max(d_hi, d_lo) * 1e3:.0f} mm at the other limit)")
            if kin.continuous[j]:
                far = rest + (math.pi / 2 if closed == "upper" else -math.pi / 2)
                row["bounds"] = sorted([round(rest, 6), round(far, 6)])
                how += "; continuous: bounds +-pi/2 from rest (guess)"
            if abs(plus - minus) < 0.005:
                how += " (WEAK: less than 5 mm between the two)"
            out.rows.append(row)
            out.notes.append(f"{j} -> {digit}_{h}: open {how}")
    for j in sorted(mimic):
        out.notes.append(f"{j}: <mimic> in the URDF, no row (follows its source's equation)")
    return out


def to_yaml(derived: Derived, urdf: str) -> str:
    """The mapping table text, every guess as a comment."""
    lines = [f"# Joint-mapper table derived from {urdf} by derive_joint_map (forward kinematics).",
             "# Guesses (check them):"]
    lines += [f"#   {n}" for n in derived.notes]
    lines += ["limit_tolerance: 0.001", "joints:"]
    for r in derived.rows:
        extra = f", bounds: [{r['bounds'][0]}, {r['bounds'][1]}]" if "bounds" in r else ""
        lines.append(f"  - {{joint: \"{r['joint']}\", human: {r['human']}, open: {r['open']}, closed: {r['closed']}{extra}}}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="derive_joint_map", description=__doc__.split("\n\n")[0])
    parser.add_argument("urdf")
    parser.add_argument("-o", "--out", help="write the YAML here (default: stdout)")
    args = parser.parse_args(argv)
    if not Path(args.urdf).is_file():
        print(f"derive_joint_map: error: no URDF {args.urdf}", file=sys.stderr)
        return 2
    try:
        derived = derive(args.urdf)
    except ValueError as exc:
        print(f"derive_joint_map: error: {exc}", file=sys.stderr)
        return 2
    text = to_yaml(derived, args.urdf)
    for n in derived.notes:
        print(f"guess: {n}", file=sys.stderr)
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}: {len(derived.rows)} rows", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
