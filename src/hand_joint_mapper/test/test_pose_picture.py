"""pose_picture: MuJoCo poses the URDF exactly as a real URDF library's forward kinematics does,
and the PNG shows different pictures for different samples."""

from __future__ import annotations

import pathlib

import cv2
import mujoco
import numpy as np
import yourdfpy
from rclpy.serialization import serialize_message
from rosbags.typesys import Stores, get_typestore
from sensor_msgs.msg import JointState

from hand_common.contract import JOINT_NAMES, TOPIC_JOINT_STATES
from hand_joint_mapper.joint_mapping import load_urdf_file
from hand_joint_mapper.pose_picture import (
    compile_urdf,
    full_positions,
    main,
    pose_model,
    render,
    samples_from_poses,
)

FIX = pathlib.Path(__file__).resolve().parent / "fixtures"


def test_mujoco_pose_matches_yourdfpy_forward_kinematics():
    urdf = load_urdf_file(FIX / "hand15_negative.urdf")
    (_, fist), = samples_from_poses(urdf, str(FIX / "map_hand15_negative.yaml"), ["fist"])
    assert fist["index_pip"] == -1.75
    fist["index_pip"] = -1.1  # not uniform, so a wrong joint assignment would show
    model = compile_urdf(urdf)
    data = mujoco.MjData(model)
    pose_model(model, data, fist)
    ref = yourdfpy.URDF.load(str(FIX / "hand15_negative.urdf"), load_meshes=False)
    ref.update_cfg(fist)
    base = data.xpos[model.body("palm").id]
    for digit in ("thumb", "index", "pinky"):
        got = data.xpos[model.body(f"{digit}_tip").id] - base
        np.testing.assert_allclose(got, ref.get_transform(f"{digit}_tip", "palm")[:3, 3], atol=1e-9)


def test_mimic_joints_follow_their_source_when_absent():
    urdf = load_urdf_file(FIX / "hand15_mimic.urdf")
    pos, unknown = full_positions(urdf, {"index_pip": 1.0, "palm_x": 3.0, "index_tip_joint": 0.0})
    assert pos == {"index_pip": 1.0, "index_dip": 0.75}
    assert unknown == ["palm_x", "index_tip_joint"]


def test_render_grid_differs_between_samples():
    urdf = load_urdf_file(FIX / "hand15.urdf")
    samples = samples_from_poses(urdf, str(FIX / "map_hand15.yaml"), ["open", "fist", "open"])
    img = render(urdf, samples, size=96)
    assert img.shape == (2 * 96, 3 * 96, 3) and img.dtype == np.uint8
    open_tile, fist_tile, open_again = (img[:96, k * 96:(k + 1) * 96].astype(int) for k in range(3))
    assert np.array_equal(open_tile, open_again)  # deterministic
    assert np.abs(open_tile - fist_tile).mean() > 2.0
    assert img.std() > 10  # not a blank picture


def test_cli_from_bag(tmp_path, capsys):
    from hand_common.bag import BagWriter

    bag = tmp_path / "bag"
    with BagWriter(bag, get_typestore(Stores.ROS2_JAZZY)) as w:
        w.add(TOPIC_JOINT_STATES, "sensor_msgs/msg/JointState")
        for k, v in enumerate((0.0, 0.9)):
            m = JointState(name=[*JOINT_NAMES, "wrist"], position=[v] * 16)
            m.header.stamp.sec = 100 + k
            w.write(TOPIC_JOINT_STATES, (100 + k) * 10**9, serialize_message(m))
    out = tmp_path / "p.png"
    assert main(["--urdf", str(FIX / "hand15.urdf"), "--bag", str(bag), "--index", "0", "--index", "-1",
                 "--size", "64", "-o", str(out)]) == 0
    assert "skipped: ['wrist']" in capsys.readouterr().err
    assert cv2.imread(str(out)).shape == (128, 128, 3)
    assert main(["--urdf", str(FIX / "hand15.urdf"), "--bag", str(bag), "--index", "5", "-o", str(out)]) == 2
    assert "index 5 outside the 2 messages" in capsys.readouterr().err
