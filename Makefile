# The two commands of the README. Both set everything up first (tools/bootstrap.sh, idempotent).
SHELL := /bin/bash
VIDEO ?= ../shared/media/human_hand_video.mp4
OUT ?= out

.PHONY: all bootstrap demo test lint clean

all: test

bootstrap:
	@bash tools/bootstrap.sh

test: bootstrap
	@bash tools/run_tests.sh $(PYTEST_ARGS)

demo: bootstrap
	@. tools/env.sh && python -m hand_tracking.runner demo --video "$(VIDEO)" --out "$(OUT)"

lint: bootstrap
	@. tools/env.sh && ruff check src tools conftest.py

clean:
	rm -rf build install log $(OUT)
