# The two commands of the README. Both set everything up first (tools/bootstrap.sh, idempotent).
SHELL := /bin/bash
VIDEO ?= ../shared/media/human_hand_video.mp4
OUT ?= out

.PHONY: all bootstrap demo arm-demo dex-demo dex-acceptance bench test lint clean

all: test

bootstrap:
	@bash tools/bootstrap.sh

test: bootstrap
	@bash tools/run_tests.sh $(PYTEST_ARGS)

# The demos run on a private DDS domain (1-101, one no other run on this machine uses: hand_common.free_domain)
# unless ROS_DOMAIN_ID is set: other ROS programs on this machine neither see nor disturb them.
PRIVATE_DOMAIN = export ROS_DOMAIN_ID=$${ROS_DOMAIN_ID:-$$(python -m hand_common.free_domain)}

demo: bootstrap
	@. tools/env.sh && $(PRIVATE_DOMAIN) && python -m hand_bringup.cli demo --video "$(VIDEO)" --out "$(OUT)"

# the gesture-teleoperated SO-101 arm (arm_teleop) on the video: out/arm/arm_demo.mp4, summary.json
arm-demo: bootstrap
	@. tools/env.sh && $(PRIVATE_DOMAIN) && python -m hand_bringup.arm_demo --video "$(VIDEO)" --out "$(OUT)/arm"

# DexPilot retargeting onto the dexterous hand with Kapandji scores (hand_retarget) on the video;
# ROBOT=leap_hand_right (or allegro_hand_right, any dex-retargeting hand; URDFs in $HAND_ROBOTS_DIR
# or ../shared/robots) drives that robot instead: out/dex_demo_$(ROBOT).mp4
dex-demo: bootstrap
	@. tools/env.sh && $(PRIVATE_DOMAIN) && python -m hand_bringup.dex_demo --video "$(VIDEO)" $(if $(ROBOT),--robot "$(ROBOT)" --out "$(OUT)/dex_demo_$(ROBOT).mp4",--out "$(OUT)/dex_demo.mp4")

# issue 24's acceptance table: every robot hand on the video (the dex-demo path without rendering) and
# derive_joint_map on the same URDFs + LEAP with a wrist; landmarks cached in out/landmarks_mc1.npz
dex-acceptance: bootstrap
	@. tools/env.sh && $(PRIVATE_DOMAIN) && python -m hand_bringup.dex_acceptance --video "$(VIDEO)" --landmarks "$(OUT)/landmarks_mc1.npz"

# issue 26's benchmark: hand_bringup.bench_pipeline's scenarios one after the other on the shared video
# (alone, full, burner, fps60, fps60_mc0, sg90, two_hands, dex, arm; ~8 min on 2 cores), the report
# with the load average and ratios; figures also in $(OUT)/bench.json. Prints figures, asserts nothing.
bench: bootstrap
	@mkdir -p "$(OUT)" && . tools/env.sh && $(PRIVATE_DOMAIN) && python -m hand_bringup.bench_pipeline --video "$(VIDEO)" --json "$(OUT)/bench.json"

lint: bootstrap
	@. tools/env.sh && ruff check src tools conftest.py

clean:
	rm -rf build install log $(OUT)
