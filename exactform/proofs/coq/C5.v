(** Claim C5 (docs/spec.md §3, §6.5): lemma (a) with the real exp and ln of Coq's standard
    library, and the per-head perturbation inequality the certificate checker applies. *)
From Coq Require Import Reals Lra Lia.
From Exactform Require Import Defs Sums.
Open Scope R_scope.

Lemma ln_le_minus_1 : forall x, 0 < x -> ln x <= x - 1.
Proof. intros. pose proof (exp_ineq1_le (ln x)). rewrite exp_ln in H0 by auto. lra. Qed.

Lemma abs_le_inv : forall x a, Rabs x <= a -> - a <= x <= a.
Proof. intros x a. unfold Rabs. destruct Rcase_abs; lra. Qed.

Lemma ln_le_mono : forall x y, 0 < x -> x <= y -> ln x <= ln y.
Proof.
  intros x y Hx [Hlt|Heq]; [left; apply ln_increasing; auto | subst; lra].
Qed.

Section Softmax.
Variables (T : nat) (s : nat -> R).
Hypothesis HT : (1 <= T)%nat.

Let Z := rsum T (fun k => exp (s k)).

Lemma Z_pos : 0 < Z.
Proof.
  apply (rsum_pos T _ O); [intros; left; apply exp_pos | lia | apply exp_pos].
Qed.

Lemma softmax_pos : forall j, 0 < softmax T s j.
Proof. intros. unfold softmax. apply Rdiv_lt_0_compat; [apply exp_pos | apply Z_pos]. Qed.

Lemma softmax_sum : rsum T (softmax T s) = 1.
Proof.
  unfold softmax. pose proof Z_pos. unfold Rdiv. rewrite rsum_scal_r. fold Z. field. lra.
Qed.

Lemma ln_softmax : forall j, ln (softmax T s j) = s j - ln Z.
Proof.
  intros. pose proof Z_pos. unfold softmax. fold Z. unfold Rdiv.
  rewrite ln_mult, ln_exp, ln_Rinv; [ring | auto | apply exp_pos | apply Rinv_0_lt_compat; auto].
Qed.

End Softmax.

Lemma softmax_ext : forall T s s' j, (forall k, (k < T)%nat -> s k = s' k) -> (j < T)%nat ->
  softmax T s j = softmax T s' j.
Proof.
  intros. unfold softmax. rewrite H by auto.
  rewrite (rsum_ext T (fun k => exp (s k)) (fun k => exp (s' k))) by (intros; rewrite H; auto).
  reflexivity.
Qed.

(** Lemma (a): 0 ≤ max v − vᵀ softmax(λv) ≤ ln T / λ, for every T ≥ 1, v and λ > 0. *)
Theorem C5_lemma_a : forall (T : nat) (v : nat -> R) (lam : R), (1 <= T)%nat -> 0 < lam ->
  0 <= vmax T v - rsum T (fun j => softmax_l lam T v j * v j) <= ln (INR T) / lam.
Proof.
  intros T v lam HT Hl. unfold softmax_l.
  set (s := fun j => lam * v j). set (p := softmax T s). set (m := vmax T v).
  set (Z := rsum T (fun k => exp (s k))).
  assert (Hp : forall j, 0 < p j) by (intros; apply softmax_pos; auto).
  assert (H1 : rsum T p = 1) by (apply softmax_sum; auto).
  assert (HTr : 0 < INR T) by (apply lt_0_INR; lia).
  split.
  - pose proof (average_le_vmax T p v (fun j _ => Rlt_le _ _ (Hp j)) H1). fold m in H. lra.
  - (* ln Z ≥ λ m: one term of Z is exp(λ m) *)
    assert (HZ : lam * m <= ln Z).
    { destruct (vmax_attained T v HT) as [j [Hj Hf]].
      rewrite <- (ln_exp (lam * m)). apply ln_le_mono; [apply exp_pos | ].
      unfold m. rewrite <- Hf. unfold Z, s.
      apply (rsum_term_le T (fun k => exp (lam * v k)) j); [intros; left; apply exp_pos | exact Hj]. }
    (* term by term: p_j λ (m − v_j) ≤ p_j ln T + 1/T − p_j *)
    assert (Hterm : forall j, p j * (lam * (m - v j)) <= p j * ln (INR T) + / INR T - p j).
    { intros j. pose proof (Hp j).
      assert (lam * (m - v j) <= - ln (p j)).
      { unfold p. rewrite ln_softmax by auto. fold Z. unfold s. lra. }
      assert (- ln (p j) <= ln (INR T) + (/ (INR T * p j) - 1)).
      { assert (HTp : 0 < INR T * p j) by (apply Rmult_lt_0_compat; auto).
        pose proof (ln_le_minus_1 (/ (INR T * p j)) ltac:(apply Rinv_0_lt_compat; auto)) as Hln.
        rewrite ln_Rinv, ln_mult in Hln by auto. lra. }
      apply Rle_trans with (p j * (ln (INR T) + (/ (INR T * p j) - 1))).
      - apply Rmult_le_compat_l; lra.
      - right. field. lra. }
    assert (Hsum : lam * (m - rsum T (fun j => p j * v j)) <= ln (INR T)).
    { replace (lam * (m - rsum T (fun j => p j * v j))) with (rsum T (fun j => p j * (lam * (m - v j)))).
      2:{ transitivity (rsum T (fun j => lam * m * p j - lam * (p j * v j))).
          - apply rsum_ext; intros; ring.
          - rewrite rsum_minus, !rsum_scal, H1. ring. }
      eapply Rle_trans; [apply rsum_le; intros j _; apply Hterm | ].
      rewrite rsum_minus, rsum_plus, rsum_scal_r, rsum_const, H1. right. field. lra. }
    apply Rmult_le_reg_l with lam; auto. unfold Rdiv. rewrite <- Rmult_assoc, Rinv_r_simpl_m by lra.
    exact Hsum.
Qed.

(** The per-head rule of the checker (docs/spec.md §6.5, "Lemma (a) with perturbed offsets"):
    scores λ(α ṽ_j + β_j) with α, λ > 0 and every β_j within D of some β̄ give
    max ṽ − ln T/(λα) − 2D/α ≤ Σ_j p_j ṽ_j ≤ max ṽ. *)
Theorem C5_head_bounds : forall (T : nat) (vt beta : nat -> R) (betabar D alpha lam : R),
  (1 <= T)%nat -> 0 < alpha -> 0 < lam ->
  (forall j, (j < T)%nat -> Rabs (beta j - betabar) <= D) ->
  let p := softmax T (fun k => lam * (alpha * vt k + beta k)) in
  vmax T vt - ln (INR T) / (lam * alpha) - 2 * D / alpha <= rsum T (fun j => p j * vt j) <= vmax T vt.
Proof.
  intros T vt beta betabar D alpha lam HT Ha Hl HD p.
  set (u := fun j => vt j + beta j / alpha).
  assert (Hpu : forall j, (j < T)%nat -> p j = softmax_l (lam * alpha) T u j).
  { intros. unfold p, softmax_l. apply softmax_ext; auto. intros. unfold u. field. lra. }
  assert (Hp : forall j, (j < T)%nat -> 0 <= p j) by (intros; left; apply softmax_pos; auto).
  assert (H1 : rsum T p = 1) by (apply softmax_sum; auto).
  destruct (C5_lemma_a T u (lam * alpha) HT ltac:(apply Rmult_lt_0_compat; auto)) as [_ Ha'].
  rewrite (rsum_ext T _ (fun j => p j * u j)) in Ha' by (intros; rewrite Hpu; auto).
  (* max u ≥ max ṽ + (β̄ − D)/α *)
  assert (Hmu : vmax T vt + (betabar - D) / alpha <= vmax T u).
  { destruct (vmax_attained T vt HT) as [j [Hj Hf]]. rewrite <- Hf.
    eapply Rle_trans; [ | apply (vmax_ge T u j Hj)]. unfold u.
    pose proof (HD j Hj). apply abs_le_inv in H. apply Rplus_le_compat_l.
    unfold Rdiv. apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; auto | lra]. }
  (* Σ p β/α ≤ (β̄ + D)/α *)
  assert (Hpb : rsum T (fun j => p j * (beta j / alpha)) <= (betabar + D) / alpha).
  { apply Rle_trans with (rsum T (fun j => p j * ((betabar + D) / alpha))).
    - apply rsum_le. intros j Hj. apply Rmult_le_compat_l; auto.
      pose proof (HD j Hj). apply abs_le_inv in H. unfold Rdiv.
      apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; auto | lra].
    - rewrite rsum_scal_r, H1. lra. }
  assert (Hsplit : rsum T (fun j => p j * vt j) = rsum T (fun j => p j * u j) - rsum T (fun j => p j * (beta j / alpha))).
  { rewrite <- rsum_minus. apply rsum_ext. intros. unfold u. ring. }
  pose proof (average_le_vmax T p vt Hp H1).
  assert (E : (betabar - D) / alpha - (betabar + D) / alpha = - (2 * D / alpha)) by (field; lra).
  split; [rewrite Hsplit; lra | exact H].
Qed.

(** The same as one inequality. *)
Theorem C5_head_perturbation : forall (T : nat) (vt beta : nat -> R) (betabar D alpha lam : R),
  (1 <= T)%nat -> 0 < alpha -> 0 < lam ->
  (forall j, (j < T)%nat -> Rabs (beta j - betabar) <= D) ->
  Rabs (rsum T (fun j => softmax T (fun k => lam * (alpha * vt k + beta k)) j * vt j) - vmax T vt)
    <= ln (INR T) / (lam * alpha) + 2 * D / alpha.
Proof.
  intros. destruct (C5_head_bounds T vt beta betabar D alpha lam H H0 H1 H2). cbv zeta in *.
  rewrite Rabs_left1 by lra. lra.
Qed.

(** The values' error passes through the maximum unamplified. *)
Theorem C5_max_perturbation : forall (T : nat) (vt v : nat -> R), (1 <= T)%nat ->
  Rabs (vmax T vt - vmax T v) <= vmax T (fun j => Rabs (vt j - v j)).
Proof. intros. apply vmax_lipschitz; auto. Qed.

(** Both together: a head's output against the exact maximum of the exact values. *)
Theorem C5_head_error : forall (T : nat) (v vt beta : nat -> R) (betabar D alpha lam : R),
  (1 <= T)%nat -> 0 < alpha -> 0 < lam ->
  (forall j, (j < T)%nat -> Rabs (beta j - betabar) <= D) ->
  Rabs (rsum T (fun j => softmax T (fun k => lam * (alpha * vt k + beta k)) j * vt j) - vmax T v)
    <= ln (INR T) / (lam * alpha) + 2 * D / alpha + vmax T (fun j => Rabs (vt j - v j)).
Proof.
  intros. pose proof (C5_head_perturbation T vt beta betabar D alpha lam H H0 H1 H2).
  pose proof (C5_max_perturbation T vt v H).
  set (a := rsum T _) in *.
  replace (a - vmax T v) with ((a - vmax T vt) + (vmax T vt - vmax T v)) by ring.
  eapply Rle_trans; [apply Rabs_triang | lra].
Qed.
