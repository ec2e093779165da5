"""A small stand-in for hand_description's scene, with the agreed names (test fixture only).

Five 3-hinge digits on a box palm; per digit a palmar spatial ``{finger}_flexor`` tendon through
sites on both sides of every joint, a dorsal ``{finger}_extensor`` spring tendon (30 N/m) plus
joint return springs (0.03 N·m/rad), and a pull-only MuJoCo position actuator ``{finger}_flexor``
on the flexor (ctrl = tendon length target, m; kp deliberately wrong, the twin sizes it).
Joint ranges 0 (open) .. upper (closed), positive = flexion; keyframe ``open``; camera ``front``.
Dimensions are gram-scale human-finger sizes. The twin's tests use it to exercise contract
checks on a model they can mutate, independent of the real description.
"""

from __future__ import annotations

import os

from hand_common.contract import FINGER_JOINTS, FINGER_NAMES

# (x of the MCP/CMC, link lengths proximal/middle/distal in m, upper limits in rad)
_DIGITS = {
    "thumb": (0.045, (0.040, 0.032, 0.026), (1.0, 1.2, 1.4)),
    "index": (0.027, (0.045, 0.027, 0.022), (1.57, 1.75, 1.4)),
    "middle": (0.009, (0.048, 0.030, 0.023), (1.57, 1.75, 1.4)),
    "ring": (-0.009, (0.045, 0.028, 0.022), (1.57, 1.75, 1.4)),
    "pinky": (-0.027, (0.037, 0.022, 0.020), (1.57, 1.75, 1.4)),
}
_R = 0.008  # link capsule radius
_FLEX_Y = 0.008  # palmar (flexor) site offset, +y is the palm side
_EXT_Y = -0.009  # dorsal (extensor) site offset
_D = 0.013  # flexor site distance from each joint along the link (sites must not cross when closed)
_DE = 0.005  # extensor site distance from each joint


def _digit(finger: str, flex_y: float) -> tuple[str, str, str]:
    x, lengths, uppers = _DIGITS[finger]
    joints = FINGER_JOINTS[finger]
    z0 = 0.045 if finger != "thumb" else 0.0
    body = ""
    close = ""
    for i, (jn, length, upper) in enumerate(zip(joints, lengths, uppers)):
        pos = f"{x} 0 {z0}" if i == 0 else f"0 0 {lengths[i - 1]}"
        body += (
            f'<body name="{jn}_link" pos="{pos}">'
            f'<joint name="{jn}" type="hinge" axis="-1 0 0" range="0 {upper}"/>'
            f'<geom type="capsule" fromto="0 0 0 0 0 {length - _R}" size="{_R * (1 - 0.1 * i)}"/>'
            f'<site name="{jn}_flex_in" pos="0 {flex_y} {_D}"/>'
            f'<site name="{jn}_ext_in" pos="0 {_EXT_Y} {_DE}"/>'
        )
        if i < 2:
            body += (
                f'<site name="{jn}_flex_out" pos="0 {flex_y} {length - _D}"/>'
                f'<site name="{jn}_ext_out" pos="0 {_EXT_Y} {length - _DE}"/>'
            )
        close += "</body>"
    palm_sites = (
        f'<site name="{finger}_flex_palm" pos="{x} {flex_y} {z0 - _D}"/>'
        f'<site name="{finger}_ext_palm" pos="{x} {_EXT_Y} {z0 - _DE}"/>'
    )
    flex_path = [f"{finger}_flex_palm"]
    ext_path = [f"{finger}_ext_palm"]
    for i, jn in enumerate(joints):
        flex_path.append(f"{jn}_flex_in")
        ext_path.append(f"{jn}_ext_in")
        if i < 2:
            flex_path.append(f"{jn}_flex_out")
            ext_path.append(f"{jn}_ext_out")
    tendons = (
        f'<spatial name="{finger}_flexor" width="0.001" rgba="0.8 0.2 0.2 1">'
        + "".join(f'<site site="{s}"/>' for s in flex_path)
        + "</spatial>"
        f'<spatial name="{finger}_extensor" stiffness="30" width="0.001" rgba="0.2 0.2 0.8 1">'
        + "".join(f'<site site="{s}"/>' for s in ext_path)
        + "</spatial>"
    )
    return palm_sites + body + close, tendons, (
        f'<position name="{finger}_flexor" tendon="{finger}_flexor" kp="10" '
        f'forcelimited="true" forcerange="-40 0"/>'
    )


def fixture_xml(extra_option: str = "", flex_y: float = _FLEX_Y) -> str:
    """The fixture scene as an MJCF string (hand, floor, light, camera ``front``).

    extra_option: attributes added to ``<option>``; flex_y: palmar offset of the flexor sites
    (negative = routed dorsally, a broken model)."""
    palm, tendons, actuators = "", "", ""
    for f in FINGER_NAMES:
        b, t, a = _digit(f, flex_y)
        palm += b
        tendons += t
        actuators += a
    return f"""<mujoco model="fixture_hand">
  <compiler angle="radian"/>
  <option timestep="0.002" {extra_option}/>
  <default><joint damping="0.0005" armature="0.00001" stiffness="0.03"/><geom contype="0" conaffinity="0" density="1000" rgba="0.9 0.8 0.7 1"/></default>
  <visual><global offwidth="640" offheight="480"/></visual>
  <worldbody>
    <light pos="0 -0.5 0.6" dir="0 1 -1"/>
    <geom name="floor" type="plane" size="0.5 0.5 0.01" pos="0 0 -0.1" rgba="0.3 0.3 0.3 1"/>
    <camera name="front" pos="0 0.35 0.05" xyaxes="-1 0 0 0 0 1"/>
    <body name="palm" pos="0 0 0">
      <geom type="box" size="0.04 0.01 0.045" pos="0 0 0"/>
      {palm}
    </body>
  </worldbody>
  <tendon>{tendons}</tendon>
  <actuator>{actuators}</actuator>
  <keyframe><key name="open" qpos="{' '.join(['0'] * 15)}"/></keyframe>
</mujoco>
"""


def write_fixture(path) -> str:
    """Write the fixture scene to ``path`` and return it as a string path."""
    with open(path, "w") as fh:
        fh.write(fixture_xml())
    return str(path)


def real_scene() -> str | None:
    """hand_description's scene.xml if it has been generated, else None."""
    try:
        from hand_description.paths import scene_path
    except ImportError:
        return None
    p = scene_path()
    return str(p) if os.path.isfile(p) else None
