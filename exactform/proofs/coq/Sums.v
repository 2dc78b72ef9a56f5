(** Facts about the finite sums [rsum] and maxima [vmax] of Defs.v. *)
From Coq Require Import Reals Lra Lia.
From Exactform Require Import Defs.
Open Scope R_scope.

Lemma rsum_ext : forall n f g, (forall i, (i < n)%nat -> f i = g i) -> rsum n f = rsum n g.
Proof.
  induction n; intros f g H; simpl; auto.
  rewrite (IHn f g) by (intros; apply H; lia). rewrite (H n) by lia. reflexivity.
Qed.

Lemma rsum_scal : forall n c f, rsum n (fun i => c * f i) = c * rsum n f.
Proof. induction n; intros; simpl; [ring | rewrite IHn; ring]. Qed.

Lemma rsum_scal_r : forall n c f, rsum n (fun i => f i * c) = rsum n f * c.
Proof. induction n; intros; simpl; [ring | rewrite IHn; ring]. Qed.

Lemma rsum_plus : forall n f g, rsum n (fun i => f i + g i) = rsum n f + rsum n g.
Proof. induction n; intros; simpl; [ring | rewrite IHn; ring]. Qed.

Lemma rsum_minus : forall n f g, rsum n (fun i => f i - g i) = rsum n f - rsum n g.
Proof. induction n; intros; simpl; [ring | rewrite IHn; ring]. Qed.

Lemma rsum_zero : forall n, rsum n (fun _ => 0) = 0.
Proof. induction n; simpl; [ | rewrite IHn]; ring. Qed.

Lemma rsum_const : forall n c, rsum n (fun _ => c) = INR n * c.
Proof. induction n; intros; simpl rsum; [simpl; ring | rewrite IHn, S_INR; ring]. Qed.

Lemma rsum_le : forall n f g, (forall i, (i < n)%nat -> f i <= g i) -> rsum n f <= rsum n g.
Proof.
  induction n; intros f g H; simpl; [lra | ].
  pose proof (IHn f g (fun i Hi => H i ltac:(lia))). pose proof (H n ltac:(lia)). lra.
Qed.

Lemma rsum_nonneg : forall n f, (forall i, (i < n)%nat -> 0 <= f i) -> 0 <= rsum n f.
Proof. intros. rewrite <- (rsum_zero n). apply rsum_le. auto. Qed.

Lemma rsum_term_le : forall n f j, (forall i, (i < n)%nat -> 0 <= f i) -> (j < n)%nat -> f j <= rsum n f.
Proof.
  induction n; intros f j H Hj; [lia | simpl].
  destruct (Nat.eq_dec j n) as [->|Hne].
  - pose proof (rsum_nonneg n f (fun i Hi => H i ltac:(lia))). lra.
  - pose proof (IHn f j (fun i Hi => H i ltac:(lia)) ltac:(lia)). pose proof (H n ltac:(lia)). lra.
Qed.

Lemma rsum_pos : forall n f j, (forall i, (i < n)%nat -> 0 <= f i) -> (j < n)%nat -> 0 < f j -> 0 < rsum n f.
Proof. intros. pose proof (rsum_term_le n f j H H0). lra. Qed.

(** Maxima. *)

Lemma rmax_ge : forall n f j, (j <= n)%nat -> f j <= rmax n f.
Proof.
  induction n; intros f j Hj; simpl.
  - replace j with O by lia. lra.
  - destruct (Nat.eq_dec j (S n)) as [->|Hne]; [apply Rmax_r | ].
    eapply Rle_trans; [apply IHn; lia | apply Rmax_l].
Qed.

Lemma rmax_attained : forall n f, exists j, (j <= n)%nat /\ f j = rmax n f.
Proof.
  induction n; intros f; simpl; [exists O; split; auto | ].
  destruct (IHn f) as [j [Hj Hf]]. unfold Rmax. destruct (Rle_dec (rmax n f) (f (S n))).
  - exists (S n); split; auto.
  - exists j; split; auto.
Qed.

Lemma vmax_ge : forall T f j, (j < T)%nat -> f j <= vmax T f.
Proof. intros [|n] f j Hj; [lia | apply rmax_ge; lia]. Qed.

Lemma vmax_attained : forall T f, (1 <= T)%nat -> exists j, (j < T)%nat /\ f j = vmax T f.
Proof.
  intros [|n] f HT; [lia | ]. destruct (rmax_attained n f) as [j [Hj Hf]].
  exists j; split; [lia | exact Hf].
Qed.

Lemma vmax_le : forall T f c, (1 <= T)%nat -> (forall j, (j < T)%nat -> f j <= c) -> vmax T f <= c.
Proof.
  intros. destruct (vmax_attained T f H) as [j [Hj <-]]. auto.
Qed.

Lemma vmax_ext : forall T f g, (forall j, (j < T)%nat -> f j = g j) -> vmax T f = vmax T g.
Proof.
  intros [|n] f g H; simpl; auto.
  assert (forall m, (m <= n)%nat -> rmax m f = rmax m g).
  { induction m; intros Hm; simpl; [apply H; lia | rewrite IHm by lia; rewrite H by lia; auto]. }
  apply H0; lia.
Qed.

(** A monotone affine map commutes with the maximum. *)
Lemma vmax_affine : forall T f a b, (1 <= T)%nat -> 0 < a ->
  vmax T (fun j => a * f j + b) = a * vmax T f + b.
Proof.
  intros T f a b HT Ha. apply Rle_antisym.
  - apply vmax_le; auto. intros j Hj. pose proof (vmax_ge T f j Hj).
    apply Rplus_le_compat_r, Rmult_le_compat_l; lra.
  - destruct (vmax_attained T f HT) as [j [Hj Hf]]. rewrite <- Hf.
    apply (vmax_ge T (fun j => a * f j + b) j Hj).
Qed.

(** A probability vector averages to at most the maximum. *)
Lemma average_le_vmax : forall T p f, (forall j, (j < T)%nat -> 0 <= p j) -> rsum T p = 1 ->
  rsum T (fun j => p j * f j) <= vmax T f.
Proof.
  intros. apply Rle_trans with (rsum T (fun j => p j * vmax T f)).
  - apply rsum_le. intros. apply Rmult_le_compat_l; auto. apply vmax_ge; auto.
  - rewrite rsum_scal_r, H0. lra.
Qed.

(** The maximum is 1-Lipschitz in the ∞-norm. *)
Lemma vmax_lipschitz : forall T f g, (1 <= T)%nat ->
  Rabs (vmax T f - vmax T g) <= vmax T (fun j => Rabs (f j - g j)).
Proof.
  intros T f g HT. set (E := vmax T (fun j => Rabs (f j - g j))).
  assert (Hd : forall j, (j < T)%nat -> Rabs (f j - g j) <= E) by (intros; apply (vmax_ge _ (fun j => Rabs (f j - g j))); auto).
  assert (vmax T f <= vmax T g + E).
  { apply vmax_le; auto. intros j Hj. pose proof (Hd j Hj). pose proof (vmax_ge T g j Hj).
    pose proof (Rle_abs (f j - g j)). lra. }
  assert (vmax T g <= vmax T f + E).
  { apply vmax_le; auto. intros j Hj. pose proof (Hd j Hj). pose proof (vmax_ge T f j Hj).
    rewrite Rabs_minus_sym in H0. pose proof (Rle_abs (g j - f j)). lra. }
  apply Rabs_le. lra.
Qed.
