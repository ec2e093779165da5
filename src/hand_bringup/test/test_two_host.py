"""The two-host setup without a network: profiles, the runner's --peer environment and the Fast DDS
profile it installs (the run across two network namespaces is test_two_host_netns.py)."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import pytest

from hand_bringup import bringup, runner

NS = {"f": "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"}


def test_robot_and_operator_profiles_split_the_graph():
    # the robot side has the actuator and no tracker, the operator side the tracker and no actuator
    for profile in bringup.ROBOT_PROFILES:
        specs = bringup.profile_nodes(profile)
        assert [s.actuator for s in specs] == [True] and "tracker" not in bringup.PROFILES[profile]
    assert bringup.PROFILES["robot"] == ("servo_driver",) and bringup.PROFILES["robot_twin"] == ("twin",)
    assert [s.key for s in bringup.profile_nodes("operator")] == ["tracker"]


def test_peer_environment_keeps_localhost_discovery_and_names_the_peers():
    env = runner.two_host_environment(["10.0.0.2", "robot-pi.local"])
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert env["ROS_STATIC_PEERS"] == "10.0.0.2;robot-pi.local"
    assert env["FASTRTPS_DEFAULT_PROFILES_FILE"].endswith(bringup.TWO_HOST_FASTDDS_PROFILE)
    for bad in ([], [""], ["a;b"], ["a b"]):
        with pytest.raises(ValueError):
            runner.two_host_environment(bad)
    with pytest.raises(ValueError, match="no file"):
        runner.two_host_environment(["10.0.0.2"], "/nonexistent/profile.xml")


def test_runner_cli_takes_peers_on_the_two_host_profiles():
    parser = runner.build_parser()
    args = parser.parse_args(["robot", "--peer", "10.0.0.2", "--peer", "10.0.0.3"])
    assert args.profile == "robot" and args.peer == ["10.0.0.2", "10.0.0.3"]
    args = parser.parse_args(["operator", "--peer", "10.0.0.1", "--source", "camera:0"])
    assert args.profile == "operator" and args.peer == ["10.0.0.1"]


def test_two_host_fastdds_profile_is_udp_only_and_the_default_profile():
    path = runner.two_host_environment(["10.0.0.2"])["FASTRTPS_DEFAULT_PROFILES_FILE"]
    root = ET.parse(path).getroot()
    transports = {t.findtext("f:transport_id", namespaces=NS): t.findtext("f:type", namespaces=NS)
                  for t in root.iterfind("f:transport_descriptors/f:transport_descriptor", NS)}
    assert set(transports.values()) == {"UDPv4"}  # no SHM: it would bypass the link between namespaces
    (participant,) = root.iterfind("f:participant", NS)
    assert participant.get("is_default_profile") == "true"
    rtps = participant.find("f:rtps", NS)
    assert rtps.findtext("f:useBuiltinTransports", namespaces=NS) == "false"  # builtin = SHM + UDP
    used = [t.text for t in rtps.iterfind("f:userTransports/f:transport_id", NS)]
    assert used and all(transports[u] == "UDPv4" for u in used)
    # no interface whitelist: UDP is bound to the host's interfaces, discovery (static peers) decides
    assert root.find(".//f:interfaceWhiteList", NS) is None
    assert os.path.isfile(path)


def test_robot_side_refuses_a_tracker_source(tmp_path):
    args = runner.build_parser().parse_args(["robot", "--source", "camera:0", "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="no tracker"):
        runner.run_profile(args)
    args = runner.build_parser().parse_args(["robot", "--fastdds-profile", "x.xml", "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="give --peer"):
        runner.run_profile(args)
