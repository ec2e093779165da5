"""The runner's command line with every profile, including ``demo`` (``make demo`` uses it).

``hand_bringup.demo`` builds on :mod:`hand_bringup.runner`; this module sits above both and passes
the demo's run function to the runner's CLI, so the runner never imports the demo (no import cycle).

  python -m hand_bringup.cli demo --video ../shared/media/human_hand_video.mp4 --out out
  python -m hand_bringup.cli sim --source camera:0      # any other runner subcommand, unchanged
"""

from __future__ import annotations

from hand_bringup import demo, runner


def main(argv: list[str] | None = None) -> None:
    """Parse argv (default sys.argv[1:]) and run the subcommand; exits with its code."""
    runner.main(argv, handlers={"demo": demo.run_demo})


if __name__ == "__main__":
    main()
