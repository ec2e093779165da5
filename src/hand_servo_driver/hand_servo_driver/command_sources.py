"""Which publisher a flexion command came from; one source followed, the others reported. No rclpy.

rclpy (Jazzy 7.1.x) gives a subscription callback with message info only ``source_timestamp``,
``received_timestamp`` and the sequence numbers — not the publisher's GID (measured here) — so a
message cannot be tied to a writer from the middleware. The contract carries it instead:
``/hand/target_flexions`` messages name their publishing node in ``header.frame_id`` (its fully
qualified name, e.g. ``/hand_tracker``; ``contract.TOPIC_TARGET_FLEXIONS``). Two views combine:

- per message: ``command_source`` set → only messages whose ``frame_id`` names it are followed,
  the others are counted (``refused``) by the name they carry (``(unnamed)`` for an empty one);
- the graph: the nodes publishing the topic (``get_publishers_info_by_topic``, refreshed by the
  node), so a second publisher is named even when it fakes the source's ``frame_id`` or sends
  nothing the driver follows.

:meth:`CommandSources.warning` is the WARN for diagnostics: every source other than the followed
one seen on the graph or in messages within :data:`RECENT_S`. With ``command_source`` empty every
message is followed (as before) and more than one source is still reported. Names are what DDS
and the messages announce (not authenticated without SROS2): this guards against a second
teleoperation source left running by mistake, not against an attacker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: the label of a message with an empty ``frame_id``
UNNAMED = "(unnamed)"
#: a source that sent a message within this is reported (s)
RECENT_S = 5.0


def node_name(name: str) -> str:
    """``hand_tracker`` → ``/hand_tracker`` (fully qualified); '' stays ''."""
    name = name.strip()
    return "" if not name else (name if name.startswith("/") else "/" + name)


@dataclass
class CommandSources:
    """source: the followed node's name ('' = every publisher). Times: our monotonic clock (s)."""

    source: str = ""
    followed: int = 0
    refused: int = 0
    last_refused_source: str = ""
    publishers: tuple[str, ...] = ()
    _seen: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.source = node_name(self.source)

    def admit(self, frame_id: str, now: float) -> bool:
        """A message carrying ``frame_id`` arrived: True when it is to be followed."""
        label = node_name(frame_id) or UNNAMED
        if label not in self._seen and len(self._seen) >= 64:  # bounded: forget the oldest
            del self._seen[min(self._seen, key=self._seen.__getitem__)]
        self._seen[label] = now
        if self.source and label != self.source:
            self.refused += 1
            self.last_refused_source = label
            return False
        self.followed += 1
        return True

    def set_publishers(self, names: list[str]) -> None:
        """The nodes publishing the command topic now (from the graph; our own node excluded)."""
        self.publishers = tuple(sorted({node_name(n) for n in names if n}))

    def recent(self, now: float) -> list[str]:
        """Message sources seen within :data:`RECENT_S`, sorted."""
        return sorted(k for k, t in self._seen.items() if now - t <= RECENT_S)

    def others(self, now: float) -> list[str]:
        """Every source besides the followed one (graph publishers and recent message names).
        Without a configured source: all of them when there is more than one, else none."""
        if self.source:
            return sorted((set(self.publishers) | set(self.recent(now))) - {self.source})
        # unset: an unnamed message is one of the graph's publishers (an older sender), not a source more
        names = set(self.publishers) | (set(self.recent(now)) - {UNNAMED})
        return sorted(names) if len(names) > 1 else []

    def warning(self, now: float, topic: str) -> str | None:
        """The diagnostics WARN naming the second source(s), or None."""
        others = self.others(now)
        if not others:
            return None
        if self.source:
            return (f"second command source on {topic}: {', '.join(others)} (following only {self.source}; "
                    f"{self.refused} refused)")
        return f"several command sources on {topic}: {', '.join(others)} (command_source unset: following all)"
