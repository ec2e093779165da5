"""hand_servo_driver: Driver for SG90 hobby servos on a microcontroller over USB serial."""
