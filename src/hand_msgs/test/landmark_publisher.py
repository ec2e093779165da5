"""Tiny node for the cross-process interface test: publishes one known HandLandmarksArray
(values from :func:`expected_values`) on /hand/landmarks every 50 ms until interrupted."""

import rclpy
from geometry_msgs.msg import Point
from hand_msgs.msg import HandLandmarks, HandLandmarksArray
from rclpy.node import Node


def expected_values() -> dict:
    return {
        "image": [(0.01 * i, 0.5 + 0.01 * i, -0.001 * i) for i in range(21)],
        "world": [(0.002 * i, -0.003 * i, 0.004 * i) for i in range(21)],
        "handedness": HandLandmarks.HANDEDNESS_RIGHT,
        "score": 0.875,
        "size": (1280, 720),
        "frame_index": 4242,
        "stamp": (12, 345),
    }


def build() -> HandLandmarksArray:
    v = expected_values()
    hand = HandLandmarks()
    hand.header.stamp.sec, hand.header.stamp.nanosec = v["stamp"]
    hand.header.frame_id = "camera_optical"
    hand.frame_index = v["frame_index"]
    hand.handedness = v["handedness"]
    hand.handedness_score = v["score"]
    hand.image_width, hand.image_height = v["size"]
    hand.image_landmarks = [Point(x=x, y=y, z=z) for x, y, z in v["image"]]
    hand.world_landmarks = [Point(x=x, y=y, z=z) for x, y, z in v["world"]]
    msg = HandLandmarksArray(hands=[hand])
    msg.header = hand.header
    return msg


def main() -> None:
    rclpy.init()
    node = Node("landmark_test_publisher")
    pub = node.create_publisher(HandLandmarksArray, "/hand/landmarks", 10)
    msg = build()
    node.create_timer(0.05, lambda: pub.publish(msg))
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
