"""What a replay did, counted: the command prints it, summed over a cluster's shards."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Counts:
    fetched: int = 0
    new: int = 0
    already_had: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, int]:
        return {
            "fetched": self.fetched,
            "new": self.new,
            "already_had": self.already_had,
            **self.extra,
        }

    def add(self, other: Counts) -> None:
        """Count `other`'s too: one shard's, on a cluster."""
        self.fetched += other.fetched
        self.new += other.new
        self.already_had += other.already_had
        for name, value in other.extra.items():
            self.extra[name] = self.extra.get(name, 0) + value
