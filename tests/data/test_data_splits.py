import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privaudit.data import MembershipSplit, check_disjoint, membership_split


def test_split_sizes_and_disjointness():
    split = membership_split(100, 30, 20, random_state=0)
    assert (split.members.size, split.non_members.size, split.population.size) == (30, 20, 50)
    everything = np.concatenate([split.members, split.non_members, split.population])
    np.testing.assert_array_equal(np.sort(everything), np.arange(100))
    np.testing.assert_array_equal(split.audit_indices,
                                  np.r_[split.members, split.non_members])
    np.testing.assert_array_equal(split.audit_labels, np.r_[np.ones(30), np.zeros(20)])


def test_split_defaults_and_determinism():
    a = membership_split(50, 10, random_state=3)
    b = membership_split(50, 10, random_state=3)
    c = membership_split(50, 10, random_state=4)
    assert a.non_members.size == 10  # balanced by default
    for name in ("members", "non_members", "population"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.members, c.members)
    assert membership_split(50, 10, 10, n_population=5, random_state=0).population.size == 5


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 200), data=st.data())
def test_split_property(n, data):
    m = data.draw(st.integers(0, n))
    k = data.draw(st.integers(0, n - m))
    split = membership_split(n, m, k, random_state=data.draw(st.integers(0, 2**32)))
    assert split.members.size == m and split.non_members.size == k
    assert np.intersect1d(split.members, split.non_members).size == 0
    assert split.members.size + split.non_members.size + split.population.size == n


def test_check_disjoint_names_the_overlapping_sets():
    check_disjoint(members=[0, 1], non_members=[2, 3], population=[4])
    with pytest.raises(ValueError, match=r"The 'population' parameter of check_disjoint must "
                                         r"be disjoint from 'members'\. Got <2 shared "
                                         r"indices such as \[1, 7\]>"):
        check_disjoint(members=[0, 1, 7], non_members=[2, 3], population=[1, 7, 9])
    with pytest.raises(ValueError, match=r"'non_members'.*disjoint from 'members'"):
        check_disjoint(members=np.array([5]), non_members=np.array([5, 6]))
    with pytest.raises(ValueError, match=r"'members' parameter.*repeated"):
        check_disjoint(members=[1, 1, 2])
    with pytest.raises(TypeError, match="'reference' parameter of check_disjoint"):
        check_disjoint(reference=[0.5, 1.5])


def test_membership_split_refuses_overlap_and_bad_sizes():
    with pytest.raises(ValueError, match=r"'non_members'.*disjoint from 'members'"):
        MembershipSplit(members=np.array([0, 1]), non_members=np.array([1, 2]),
                        population=np.array([], dtype=int))
    with pytest.raises(ValueError, match="'n_non_members' parameter of membership_split"):
        membership_split(10, 6, 6)
    with pytest.raises(ValueError, match="'n_population' parameter of membership_split"):
        membership_split(10, 3, 3, n_population=5)
    with pytest.raises(TypeError, match="'n_members' parameter of membership_split"):
        membership_split(10, 2.0)
    with pytest.raises(ValueError, match="'n' parameter of membership_split"):
        membership_split(-1, 0)
