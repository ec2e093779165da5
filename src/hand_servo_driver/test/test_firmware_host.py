"""The firmware, compiled on the host with g++: its frame parser and board logic pass the shared
vectors (same totals as the Python run), and the real sketch runs against Arduino stand-ins
(Servo library and PCA9685 builds)."""

import os
import shutil
import subprocess

import pytest

from hand_servo_driver import vectors

FIRMWARE = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "firmware"))
BOARD = os.path.join(FIRMWARE, "hand_servo_board")
HOST = os.path.join(FIRMWARE, "host_test")
VECTORS = os.path.join(FIRMWARE, "test_vectors.txt")
SOURCES = [os.path.join(BOARD, "protocol.cpp"), os.path.join(BOARD, "board_logic.cpp")]
WARN = ["-std=c++11", "-Wall", "-Wextra", "-Werror", "-pedantic"]

GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="g++ not found on PATH: cannot compile the firmware on the host")


def compile_(out, *args):
    res = subprocess.run([GXX, *WARN, *args, "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"g++ failed:\n{res.stderr}"


def sanitizers_work(tmp_path) -> bool:
    src = tmp_path / "probe.cpp"
    src.write_text("int main() { return 0; }\n")
    res = subprocess.run([GXX, "-fsanitize=address,undefined", str(src), "-o", str(tmp_path / "probe")],
                         capture_output=True, timeout=60)
    return res.returncode == 0


def test_firmware_parser_passes_the_shared_vectors(tmp_path):
    exe = tmp_path / "host_test"
    extra = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"] \
        if sanitizers_work(tmp_path) else ["-O1"]
    compile_(exe, *extra, f"-I{BOARD}", os.path.join(HOST, "host_test.cpp"), *SOURCES)
    res = subprocess.run([str(exe), VECTORS], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    summary = res.stdout.strip().splitlines()[-1]
    py = vectors.run_file(VECTORS)
    assert py.failures == []
    assert summary == py.summary()  # same statements, same number of checks, nothing failed
    assert "failed=0" in summary and "board=7" in summary


def test_firmware_host_test_detects_a_wrong_vector(tmp_path):
    exe = tmp_path / "host_test"
    compile_(exe, f"-I{BOARD}", os.path.join(HOST, "host_test.cpp"), *SOURCES)
    bad = tmp_path / "bad.txt"
    bad.write_text(open(VECTORS).read().replace("outputs 1500 1600 1700 1800 1900",
                                                "outputs 1500 1600 1700 1800 1901"))
    res = subprocess.run([str(exe), str(bad)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "failed=1" in res.stdout


@pytest.mark.parametrize("pca9685", [0, 1], ids=["servo_library", "pca9685"])
def test_sketch_runs_on_arduino_stand_ins(tmp_path, pca9685):
    exe = tmp_path / "sketch_test"
    compile_(exe, f"-DHSB_USE_PCA9685={pca9685}", f"-I{os.path.join(HOST, 'arduino_stubs')}", f"-I{BOARD}",
             os.path.join(HOST, "sketch_test.cpp"), *SOURCES)
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout
    assert "failed=0" in res.stdout and ("PCA9685" if pca9685 else "Servo") in res.stdout


AVR_GXX = shutil.which("avr-g++")
AVR_CORE = "/usr/share/arduino/hardware/arduino/avr"  # Debian package arduino-core-avr


@pytest.mark.skipif(AVR_GXX is None or not os.path.isdir(AVR_CORE),
                    reason="avr-g++ / Arduino AVR core not installed (Debian: gcc-avr avr-libc arduino-core-avr)")
def test_firmware_compiles_for_an_arduino_uno(tmp_path):
    """The portable sources and the sketch compile for an ATmega328P against the real Arduino
    core (the Servo header is the host stand-in: only the sketch's own code is checked)."""
    flags = ["-mmcu=atmega328p", "-DF_CPU=16000000L", "-DARDUINO=10807", "-DARDUINO_AVR_UNO",
             "-DARDUINO_ARCH_AVR", "-Os", "-std=gnu++11", "-fno-exceptions", "-fno-threadsafe-statics",
             "-Wall", "-Wextra", "-Werror"]
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    shutil.copy(os.path.join(HOST, "arduino_stubs", "Servo.h"), stubs / "Servo.h")
    sizes = {}
    for src in SOURCES + [os.path.join(BOARD, "hand_servo_board.ino")]:
        obj = tmp_path / (os.path.basename(src) + ".o")
        res = subprocess.run([AVR_GXX, *flags, f"-I{AVR_CORE}/cores/arduino", f"-I{AVR_CORE}/variants/standard",
                              f"-I{stubs}", f"-I{BOARD}", "-x", "c++", "-c", src, "-o", str(obj)],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, f"avr-g++ {os.path.basename(src)}:\n{res.stderr}"
        size = subprocess.run(["avr-size", str(obj)], capture_output=True, text=True, timeout=30).stdout
        sizes[os.path.basename(src)] = int(size.splitlines()[1].split()[0])
    # protocol + board logic fit easily in an UNO's 32 KB of flash
    assert sizes["protocol.cpp"] + sizes["board_logic.cpp"] < 4096, sizes
