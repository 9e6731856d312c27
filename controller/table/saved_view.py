"""`SavedField`: one field of the table's saved state, read through the table."""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar, cast, overload

from controller.table.state import SavedState

T = TypeVar("T")


class HoldsSavedState(Protocol):
    saved: SavedState


class SavedField(Generic[T]):
    """Reads `owner.saved.<name>`; there is no setter, so nothing outside the collaborators
    changes the saved state (they hold `saved` itself)."""

    def __set_name__(self, owner: type, name: str) -> None:
        if name not in SavedState.names():
            raise TypeError(f"{owner.__name__}.{name}: not a field of SavedState")
        self._name = name

    @overload
    def __get__(self, holder: None, owner: type) -> SavedField[T]: ...

    @overload
    def __get__(self, holder: HoldsSavedState, owner: type) -> T: ...

    def __get__(self, holder: HoldsSavedState | None, owner: type) -> SavedField[T] | T:
        if holder is None:
            return self
        return cast(T, getattr(holder.saved, self._name))

    def __set__(self, holder: Any, value: Any) -> None:
        raise AttributeError(f"{self._name} is part of the saved state: the table's "
                             "collaborators change it, through `saved`")
