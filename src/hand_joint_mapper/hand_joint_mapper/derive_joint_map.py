"""derive_joint_map: a starting joint-mapper table (YAML) for any URDF hand, by forward kinematics
(pinocchio; no rclpy, no meshes).

    derive_joint_map ../shared/robots/leap_hand/leap_hand_right.urdf -o leap_map.yaml
    python -m hand_joint_mapper.derive_joint_map URDF [-o OUT]

What it guesses, and prints (every guess is also a comment in the YAML):

1. **Palm and wrist**: walking the joint tree down from the root, the movable joints passed while
   the tree does not branch (a wrist, a forearm: one joint below the other) are **wrist/forearm
   joints**, left unmapped at rest; the link where the tree branches into digits is the **palm**.
2. **Chains**: each branch below the palm is a digit; its tip is the link farthest out on its
   longest path (fixed tip links included); its chain is the movable joints from the palm to it.
   A hand needs a thumb and >= 2 fingers (3 branches). The fingers are ordered across the palm
   starting next to the thumb: index, middle, ring, pinky (a 4-digit hand has no pinky).
3. **Palm plane**: plane of the palm link's origin and the fingers' first joints; its centre (mean
   of those points) is what "closing" approaches. The **thumb** is the chain whose removal leaves
   the other chains' bases most nearly in a row (not the one nearest the root: roots sit anywhere).
4. **Kind of joint by axis** (at the rest pose): a finger joint whose axis is within 45 degrees of
   the palm normal is an **abduction**, within 45 degrees of the finger's direction a **twist**;
   both are left unmapped (published at rest: the flexion contract has no abduction). A thumb
   joint whose axis is within 45 degrees of the palm's long axis (palm -> finger bases) is the
   **opposition** (Inspire's thumb yaw, Ability's rotator): it swings the thumb across the palm and
   is driven by ``thumb_cmc`` when the thumb has fewer than three flexions besides it, else left at
   rest. The other joints are **flexions**, mapped in chain order to MCP, PIP, DIP (thumb: the last
   three to CMC, MCP, IP); surplus flexions are left unmapped.
5. **Closing direction**: the limit at which the digit's tip is nearer the palm centre (all other
   joints at rest, mimic joints by their equation; continuous joints: +-1 rad); ``closed`` = that
   limit.
6. **Open**: ``open: <rest>`` with rest = 0 clipped into the limits (a flat URDF hand is open at
   q = 0, which is usually *not* a limit).
7. ``<mimic>`` joints get no row (the mapper follows their equation, and so does every forward
   kinematics here: Ability's fingers rest at q2 = 0.7235); continuous joints get ``bounds`` of
   +-pi/2 around rest (a guess, printed).

A file that is not well-formed XML, or not a URDF pinocchio can read, is a one-line error (exit 2).
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

from hand_common.contract import FINGER_NAMES

FINGERS = FINGER_NAMES[1:]  # the contract's digits without the thumb
FINGER_JOINTS = ("mcp", "pip", "dip")
THUMB_JOINTS = ("cmc", "mcp", "ip")


@dataclass
class Derived:
    """rows: mapping rows (dicts for the YAML); notes: every guess, in words; chains: digit -> joints."""

    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    chains: dict[str, list[str]] = field(default_factory=dict)
    tips: dict[str, str] = field(default_factory=dict)
    wrist: list[str] = field(default_factory=list)       # joints above the palm (left at rest)
    palm: str = ""                                       # the link where the digits branch
    centre: np.ndarray | None = None                     # palm centre at rest (m, root frame)
    opposition: list[str] = field(default_factory=list)


class _Kin:
    def __init__(self, urdf: str):
        import pinocchio as pin

        self.pin = pin
        self.mimic = _mimic_joints(urdf)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                self.model = pin.buildModelFromUrdf(urdf)
        except (RuntimeError, ValueError) as exc:
            raise ValueError(f"{urdf}: pinocchio cannot read it as a URDF: {str(exc).strip().splitlines()[0]}") from None
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
        self.rest = self.coupled({n: min(max(0.0, self.lower[n]), self.upper[n]) for n in self.names})

    def coupled(self, values: dict[str, float]) -> dict[str, float]:
        """``values`` with every mimic joint set by its equation (chains resolved, clipped to its limits)."""
        out = dict(values)
        for n, (src, mult, off) in self.mimic.items():
            seen = [n]
            while src in self.mimic and src not in seen:
                seen.append(src)
                s2, m2, o2 = self.mimic[src]
                src, mult, off = s2, mult * m2, mult * o2 + off
            if n in self.lower and src in out:
                out[n] = min(max(mult * out[src] + off, self.lower[n]), self.upper[n])
        return out

    def q(self, values: dict[str, float]) -> np.ndarray:
        x = self.pin.neutral(self.model)
        for n, v in self.coupled({**self.rest, **values}).items():
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


def _mimic_joints(urdf: str) -> dict[str, tuple[str, float, float]]:
    """{mimic joint: (source, multiplier, offset)}. ValueError (one line) for malformed XML."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.parse(urdf).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"{urdf} is not well-formed XML: {exc}") from None
    except OSError as exc:
        raise ValueError(f"cannot read {urdf}: {exc.strerror or exc}") from None
    if root.tag != "robot":
        raise ValueError(f"{urdf}: root element is <{root.tag}>, expected <robot>")
    out = {}
    for j in root.iter("joint"):
        m = j.find("mimic")
        if m is not None:
            try:
                out[j.get("name")] = (m.get("joint"), float(m.get("multiplier", 1.0)), float(m.get("offset", 0.0)))
            except ValueError:
                raise ValueError(f"{urdf}: joint '{j.get('name')}' has a non-numeric <mimic>") from None
    return out


def derive(urdf: str) -> Derived:
    """The rows and the guesses for ``urdf`` (see the module docstring). ValueError if no hand is found."""
    kin = _Kin(urdf)
    pin, m = kin.pin, kin.model
    mimic = kin.mimic
    out = Derived()
    rest_pos = kin.frames()
    children: dict[int, list[int]] = {j: [] for j in range(m.njoints)}
    for j in range(1, m.njoints):
        children[m.parents[j]].append(j)
    # 1. down from the root while the tree does not branch: wrist / forearm joints
    palm_joint, wrist = 0, []
    while len(children[palm_joint]) == 1:
        palm_joint = children[palm_joint][0]
        wrist.append(m.names[palm_joint])
    bodies = [f for f in m.frames if f.type == pin.FrameType.BODY]
    palm = next((f.name for f in bodies if f.parentJoint == palm_joint), bodies[0].name if bodies else "")
    kin.frames()          # oMi at rest
    root = kin.data.oMi[palm_joint].translation.copy() if palm_joint else np.zeros(3)
    out.wrist, out.palm = list(wrist), palm
    if wrist:
        out.notes.append(f"wrist/forearm: {', '.join(wrist)} above the palm (the tree does not branch there): "
                         "unmapped, at rest")
    out.notes.append(f"palm: link '{palm}', where the tree branches into {len(children[palm_joint])} chains")

    # 2. one digit per branch: the body farthest out on the branch's longest path
    def subtree(j: int) -> list[int]:
        todo, got = [j], []
        while todo:
            k = todo.pop()
            got.append(k)
            todo += children[k]
        return got

    by_base: dict[str, tuple[str, list[str]]] = {}
    for c in children[palm_joint]:
        below = set(subtree(c))
        best, best_key = None, None
        for f in bodies:
            if f.parentJoint not in below:
                continue
            jid, chain = f.parentJoint, []
            while jid != palm_joint:
                chain.append(m.names[jid])
                jid = m.parents[jid]
            key = (len(chain), float(np.linalg.norm(rest_pos[f.name] - kin.joint_pos_axis(m.names[c])[0])))
            if best_key is None or key > best_key:
                best, best_key = (f.name, chain[::-1]), key
        if best is None or all(j in mimic for j in best[1]):
            out.notes.append(f"branch at joint {m.names[c]}: no independent joint, not a digit")
            continue
        by_base[m.names[c]] = best
    if len(by_base) < 3:
        raise ValueError(f"{urdf}: found {len(by_base)} digit chains where the tree branches (at link '{palm}'"
                         f"{', below wrist joints ' + ', '.join(wrist) if wrist else ''}); need a thumb and >= 2 fingers")
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
    out.notes.append(f"palm plane: palm origin + finger bases, centre {np.round(centre * 1e3, 1).tolist()} mm; thumb = the chain "
                     f"off the row of the other chains' bases ({thumb_base}); fingers across the palm from the thumb side: "
                     + ", ".join(f"{d}={tip}" for d, (tip, _) in digits.items() if d != "thumb"))
    if len(finger_bases) < 4:
        out.notes.append(f"no {', '.join(FINGERS[len(finger_bases):])}: those human joints drive nothing")
    along = centre - root
    along = along / np.linalg.norm(along) if np.linalg.norm(along) > 1e-9 else np.zeros(3)
    out.centre = centre
    for digit, (tip, chain) in digits.items():
        out.chains[digit], out.tips[digit] = chain, tip
        tip_rest = rest_pos[tip]
        direction = tip_rest - kin.joint_pos_axis(chain[0])[0]
        direction /= np.linalg.norm(direction)
        flex, opposition = [], []
        for j in chain:
            if j in mimic:
                continue
            _, axis = kin.joint_pos_axis(j)
            if digit == "thumb" and abs(float(axis @ along)) > math.cos(math.radians(45)):
                opposition.append(j)
                continue
            if digit != "thumb" and abs(float(axis @ normal)) > math.cos(math.radians(45)):
                out.notes.append(f"{j} ({digit}): axis within 45 deg of the palm normal -> abduction, unmapped (rest)")
                continue
            if abs(float(axis @ direction)) > math.cos(math.radians(45)):
                out.notes.append(f"{j} ({digit}): axis along the digit -> twist, unmapped (rest)")
                continue
            flex.append(j)
        humans = THUMB_JOINTS if digit == "thumb" else FINGER_JOINTS
        out.opposition += opposition
        for k, j in enumerate(opposition):
            if k == 0 and len(flex) < 3:
                out.notes.append(f"{j} (thumb): axis within 45 deg of the palm's long axis -> opposition (swings the "
                                 f"thumb across the palm), driven by thumb_cmc (the thumb has {len(flex)} flexions besides it)")
                flex.insert(0, j)
            else:
                out.notes.append(f"{j} (thumb): axis within 45 deg of the palm's long axis -> opposition, unmapped (rest): "
                                 "the thumb has three flexions besides it")
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
