"""Study storage: SQLite by default, resumable after a crash without re-spending budget."""

from privtune.storage._sqlite import Study, StudyJournal, StudyLockedError, StudyStorage

__all__ = ["Study", "StudyJournal", "StudyLockedError", "StudyStorage"]
