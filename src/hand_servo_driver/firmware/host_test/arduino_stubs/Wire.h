// Host stand-in: the PCA9685 stub needs no I2C.
#ifndef HSB_STUB_WIRE_H
#define HSB_STUB_WIRE_H
#endif
